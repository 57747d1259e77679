//! Recorded runner output (produced by the real tools while writing these parsers, unless
//! noted), used by the parser and detection tests.

/// `pytest -v` (pytest 9.2, stdout and stderr merged).
pub(super) const PYTEST_V: &str = r###"============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-9.2.0, pluggy-1.7.0 -- /tmp/pyv/bin/python3
cachedir: .pytest_cache
rootdir: /tmp/pyproj
collecting ... collected 10 items

tests/test_math.py::test_add PASSED                                      [ 10%]
tests/test_math.py::test_sub FAILED                                      [ 20%]
tests/test_math.py::test_skipped SKIPPED (not ready)                     [ 30%]
tests/test_math.py::test_param[1] PASSED                                 [ 40%]
tests/test_math.py::test_param[2] FAILED                                 [ 50%]
tests/test_math.py::test_param[a b] PASSED                               [ 60%]
tests/test_math.py::TestThing::test_method PASSED                        [ 70%]
tests/test_math.py::TestThing::test_error FAILED                         [ 80%]
tests/test_math.py::test_xfail XFAIL                                     [ 90%]
tests/test_math.py::test_fixture_error ERROR                             [100%]

==================================== ERRORS ====================================
_____________________ ERROR at setup of test_fixture_error _____________________

    @pytest.fixture
    def broken():
>       raise ValueError("fixture broke")
E       ValueError: fixture broke

tests/test_math.py:29: ValueError
=================================== FAILURES ===================================
___________________________________ test_sub ___________________________________

    def test_sub():
>       assert 2 - 1 == 0, "subtraction is broken"
E       AssertionError: subtraction is broken
E       assert (2 - 1) == 0

tests/test_math.py:7: AssertionError
________________________________ test_param[2] _________________________________

x = 2

    @pytest.mark.parametrize("x", [1, 2, "a b"])
    def test_param(x):
>       assert x != 2
E       assert 2 != 2

tests/test_math.py:15: AssertionError
_____________________________ TestThing.test_error _____________________________

self = <test_math.TestThing object at 0x7fc5a19bce10>

    def test_error(self):
>       raise RuntimeError("boom")
E       RuntimeError: boom

tests/test_math.py:21: RuntimeError
=========================== short test summary info ============================
FAILED tests/test_math.py::test_sub - AssertionError: subtraction is broken
FAILED tests/test_math.py::test_param[2] - assert 2 != 2
FAILED tests/test_math.py::TestThing::test_error - RuntimeError: boom
ERROR tests/test_math.py::test_fixture_error - ValueError: fixture broke
========== 3 failed, 4 passed, 1 skipped, 1 xfailed, 1 error in 0.11s ==========
"###;

/// `pytest -rA` on the same suite.
pub(super) const PYTEST_RA: &str = r###"============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-9.2.0, pluggy-1.7.0
rootdir: /tmp/pyproj
collected 10 items

tests/test_math.py .Fs.F..FxE                                            [100%]

==================================== ERRORS ====================================
_____________________ ERROR at setup of test_fixture_error _____________________

    @pytest.fixture
    def broken():
>       raise ValueError("fixture broke")
E       ValueError: fixture broke

tests/test_math.py:29: ValueError
=================================== FAILURES ===================================
___________________________________ test_sub ___________________________________

    def test_sub():
>       assert 2 - 1 == 0, "subtraction is broken"
E       AssertionError: subtraction is broken
E       assert (2 - 1) == 0

tests/test_math.py:7: AssertionError
________________________________ test_param[2] _________________________________

x = 2

    @pytest.mark.parametrize("x", [1, 2, "a b"])
    def test_param(x):
>       assert x != 2
E       assert 2 != 2

tests/test_math.py:15: AssertionError
_____________________________ TestThing.test_error _____________________________

self = <test_math.TestThing object at 0x7fc8af7a8c50>

    def test_error(self):
>       raise RuntimeError("boom")
E       RuntimeError: boom

tests/test_math.py:21: RuntimeError
==================================== PASSES ====================================
=========================== short test summary info ============================
PASSED tests/test_math.py::test_add
PASSED tests/test_math.py::test_param[1]
PASSED tests/test_math.py::test_param[a b]
PASSED tests/test_math.py::TestThing::test_method
SKIPPED [1] tests/test_math.py:9: not ready
XFAIL tests/test_math.py::test_xfail
ERROR tests/test_math.py::test_fixture_error - ValueError: fixture broke
FAILED tests/test_math.py::test_sub - AssertionError: subtraction is broken
FAILED tests/test_math.py::test_param[2] - assert 2 != 2
FAILED tests/test_math.py::TestThing::test_error - RuntimeError: boom
========== 3 failed, 4 passed, 1 skipped, 1 xfailed, 1 error in 0.11s ==========
"###;

/// Plain `pytest`: names only the failures.
pub(super) const PYTEST_DEFAULT: &str = r###"============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-9.2.0, pluggy-1.7.0
rootdir: /tmp/pyproj
collected 10 items

tests/test_math.py .Fs.F..FxE                                            [100%]

==================================== ERRORS ====================================
_____________________ ERROR at setup of test_fixture_error _____________________

    @pytest.fixture
    def broken():
>       raise ValueError("fixture broke")
E       ValueError: fixture broke

tests/test_math.py:29: ValueError
=================================== FAILURES ===================================
___________________________________ test_sub ___________________________________

    def test_sub():
>       assert 2 - 1 == 0, "subtraction is broken"
E       AssertionError: subtraction is broken
E       assert (2 - 1) == 0

tests/test_math.py:7: AssertionError
________________________________ test_param[2] _________________________________

x = 2

    @pytest.mark.parametrize("x", [1, 2, "a b"])
    def test_param(x):
>       assert x != 2
E       assert 2 != 2

tests/test_math.py:15: AssertionError
_____________________________ TestThing.test_error _____________________________

self = <test_math.TestThing object at 0x7ff5b3cc6a50>

    def test_error(self):
>       raise RuntimeError("boom")
E       RuntimeError: boom

tests/test_math.py:21: RuntimeError
=========================== short test summary info ============================
FAILED tests/test_math.py::test_sub - AssertionError: subtraction is broken
FAILED tests/test_math.py::test_param[2] - assert 2 != 2
FAILED tests/test_math.py::TestThing::test_error - RuntimeError: boom
ERROR tests/test_math.py::test_fixture_error - ValueError: fixture broke
========== 3 failed, 4 passed, 1 skipped, 1 xfailed, 1 error in 0.04s ==========
"###;

/// `pytest -v` when a module fails to import.
pub(super) const PYTEST_COLLECTION_ERROR: &str = r###"============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-9.2.0, pluggy-1.7.0 -- /tmp/pyv/bin/python3
cachedir: .pytest_cache
rootdir: /tmp/pyce
collecting ... collected 1 item / 1 error

==================================== ERRORS ====================================
____________________ ERROR collecting tests/test_broken.py _____________________
ImportError while importing test module '/tmp/pyce/tests/test_broken.py'.
Hint: make sure your test modules/packages have valid Python names.
Traceback:
/root/.pyenv/versions/3.11.7/lib/python3.11/importlib/__init__.py:126: in import_module
    return _bootstrap._gcd_import(name[level:], package, level)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
tests/test_broken.py:1: in <module>
    import nonexistent_mod
E   ModuleNotFoundError: No module named 'nonexistent_mod'
=========================== short test summary info ============================
ERROR tests/test_broken.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
=============================== 1 error in 0.16s ===============================
"###;

/// `pytest --junitxml` on the same suite.
pub(super) const PYTEST_JUNIT: &str = r###"<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="1" failures="3" skipped="2" tests="10" time="0.119" timestamp="2026-11-30T13:26:55.527255+00:00" hostname="vm"><testcase classname="tests.test_math" name="test_add" time="0.001" /><testcase classname="tests.test_math" name="test_sub" time="0.001"><failure message="AssertionError: subtraction is broken&#10;assert (2 - 1) == 0">def test_sub():
&gt;       assert 2 - 1 == 0, "subtraction is broken"
E       AssertionError: subtraction is broken
E       assert (2 - 1) == 0

tests/test_math.py:7: AssertionError</failure></testcase><testcase classname="tests.test_math" name="test_skipped" time="0.000"><skipped type="pytest.skip" message="not ready">/tmp/pyproj/tests/test_math.py:9: not ready</skipped></testcase><testcase classname="tests.test_math" name="test_param[1]" time="0.001" /><testcase classname="tests.test_math" name="test_param[2]" time="0.001"><failure message="assert 2 != 2">x = 2

    @pytest.mark.parametrize("x", [1, 2, "a b"])
    def test_param(x):
&gt;       assert x != 2
E       assert 2 != 2

tests/test_math.py:15: AssertionError</failure></testcase><testcase classname="tests.test_math" name="test_param[a b]" time="0.009" /><testcase classname="tests.test_math.TestThing" name="test_method" time="0.000" /><testcase classname="tests.test_math.TestThing" name="test_error" time="0.000"><failure message="RuntimeError: boom">self = &lt;test_math.TestThing object at 0x7f03eefac350&gt;

    def test_error(self):
&gt;       raise RuntimeError("boom")
E       RuntimeError: boom

tests/test_math.py:21: RuntimeError</failure></testcase><testcase classname="tests.test_math" name="test_xfail" time="0.000"><skipped type="pytest.xfail" message="" /></testcase><testcase classname="tests.test_math" name="test_fixture_error" time="0.000"><error message="failed on setup with &quot;ValueError: fixture broke&quot;">@pytest.fixture
    def broken():
&gt;       raise ValueError("fixture broke")
E       ValueError: fixture broke

tests/test_math.py:29: ValueError</error></testcase></testsuite></testsuites>"###;

/// Two maven-surefire reports, concatenated (written by hand in surefire 3's format).
pub(super) const SUREFIRE_JUNIT: &str = r###"<?xml version="1.0" encoding="UTF-8"?>
<testsuite xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="https://maven.apache.org/surefire/maven-surefire-plugin/xsd/surefire-test-report-3.0.xsd" version="3.0" name="com.example.CalculatorTest" time="0.052" tests="5" errors="1" skipped="1" failures="1">
  <properties>
    <property name="java.specification.version" value="17"/>
    <property name="surefire.test.class.path" value="/home/dev/calc/target/test-classes:/home/dev/calc/target/classes"/>
    <property name="line.separator" value="&#10;"/>
  </properties>
  <testcase name="adds" classname="com.example.CalculatorTest" time="0.003"/>
  <testcase name="divides" classname="com.example.CalculatorTest" time="0.004">
    <failure message="expected: &lt;2&gt; but was: &lt;3&gt;" type="org.opentest4j.AssertionFailedError"><![CDATA[org.opentest4j.AssertionFailedError: expected: <2> but was: <3>
	at org.junit.jupiter.api.AssertionFailureBuilder.build(AssertionFailureBuilder.java:151)
	at com.example.CalculatorTest.divides(CalculatorTest.java:21)
]]></failure>
    <system-out><![CDATA[dividing 6 by 2
]]></system-out>
  </testcase>
  <testcase name="multiplies" classname="com.example.CalculatorTest" time="0">
    <skipped message="not implemented yet"/>
  </testcase>
  <testcase name="overflows" classname="com.example.CalculatorTest" time="0.001">
    <error message="/ by zero" type="java.lang.ArithmeticException"><![CDATA[java.lang.ArithmeticException: / by zero
	at com.example.CalculatorTest.overflows(CalculatorTest.java:30)
]]></error>
  </testcase>
  <testcase name="flaky" classname="com.example.CalculatorTest" time="0.002">
    <flakyFailure message="timing" type="java.lang.AssertionError">
      <stackTrace><![CDATA[java.lang.AssertionError: timing
	at com.example.CalculatorTest.flaky(CalculatorTest.java:41)
]]></stackTrace>
    </flakyFailure>
  </testcase>
</testsuite>
<?xml version="1.0" encoding="UTF-8"?>
<!-- surefire writes one report per class; these were concatenated with cat -->
<testsuite xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" version="3.0" name="com.example.ParserTest" time="0.011" tests="2" errors="0" skipped="0" failures="1">
  <testcase name="parses &lt;empty&gt; &amp; &quot;quoted&quot;" classname="com.example.ParserTest" time="0.001"/>
  <testcase name="rejects" classname="com.example.ParserTest" time="0.006">
    <failure message="expected exception" type="java.lang.AssertionError"><![CDATA[java.lang.AssertionError: expected exception]]></failure>
    <rerunFailure message="expected exception" type="java.lang.AssertionError">
      <stackTrace><![CDATA[java.lang.AssertionError: expected exception]]></stackTrace>
    </rerunFailure>
  </testcase>
</testsuite>
"###;

/// `cargo test --no-fail-fast 2>&1` in a workspace (lib, integration test, bin, doc-tests).
pub(super) const CARGO_TEST: &str = r###"    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.01s
     Running unittests src/lib.rs (target/debug/deps/alpha-e62994b938fd5803)

running 4 tests
test tests::it_adds ... ok
test tests::it_is_slow ... ignored, slow
test tests::it_fails ... FAILED
test tests::it_panics - should panic ... ok

failures:

---- tests::it_fails stdout ----

thread 'tests::it_fails' (7582) panicked at alpha/src/lib.rs:14:21:
assertion `left == right` failed
  left: 2
 right: 3
stack backtrace:
   0: __rustc::rust_begin_unwind
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/panicking.rs:689:5
   1: core::panicking::panic_fmt
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:80:14
   2: core::panicking::assert_failed_inner
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:439:17
   3: core::panicking::assert_failed::<i32, i32>
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:394:5
   4: alpha::tests::it_fails
             at ./src/lib.rs:14:21
   5: alpha::tests::it_fails::{{closure}}
             at ./src/lib.rs:14:18
   6: core::ops::function::FnOnce::call_once
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ops/function.rs:250:5
   7: <fn() -> core::result::Result<(), alloc::string::String> as core::ops::function::FnOnce<()>>::call_once
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ops/function.rs:250:5
note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.


failures:
    tests::it_fails

test result: FAILED. 2 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.12s

error: test failed, to rerun pass `-p alpha --lib`
     Running tests/cli.rs (target/debug/deps/cli-8a6a4a56d14e8148)

running 1 test
test it_adds ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

     Running unittests src/main.rs (target/debug/deps/beta-33c756a382f9498f)

running 1 test
test tests::it_adds ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

   Doc-tests alpha

running 1 test
test alpha/src/lib.rs - add (line 3) ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

all doctests ran in 0.23s; merged doctests compilation took 0.23s
error: 1 target failed:
    `-p alpha --lib`
"###;

/// The same run, stdout then stderr captured apart.
pub(super) const CARGO_TEST_STDOUT: &str = r###"
running 4 tests
test tests::it_adds ... ok
test tests::it_is_slow ... ignored, slow
test tests::it_panics - should panic ... ok
test tests::it_fails ... FAILED

failures:

---- tests::it_fails stdout ----

thread 'tests::it_fails' (7502) panicked at alpha/src/lib.rs:14:21:
assertion `left == right` failed
  left: 2
 right: 3
stack backtrace:
   0: __rustc::rust_begin_unwind
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/panicking.rs:689:5
   1: core::panicking::panic_fmt
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:80:14
   2: core::panicking::assert_failed_inner
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:439:17
   3: core::panicking::assert_failed::<i32, i32>
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:394:5
   4: alpha::tests::it_fails
             at ./src/lib.rs:14:21
   5: alpha::tests::it_fails::{{closure}}
             at ./src/lib.rs:14:18
   6: core::ops::function::FnOnce::call_once
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ops/function.rs:250:5
   7: <fn() -> core::result::Result<(), alloc::string::String> as core::ops::function::FnOnce<()>>::call_once
             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ops/function.rs:250:5
note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.


failures:
    tests::it_fails

test result: FAILED. 2 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.08s


running 1 test
test it_adds ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s


running 1 test
test tests::it_adds ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s


running 1 test
test alpha/src/lib.rs - add (line 3) ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

all doctests ran in 0.18s; merged doctests compilation took 0.17s
"###;

/// `cargo test --no-fail-fast 2>&1` where a unit test segfaults.
pub(super) const CARGO_TEST_SIGSEGV: &str = r###"    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.01s
     Running unittests src/lib.rs (target/debug/deps/alpha-e62994b938fd5803)

running 2 tests
error: test failed, to rerun pass `-p alpha --lib`

Caused by:
  process didn't exit successfully: `/tmp/rsproj/target/debug/deps/alpha-e62994b938fd5803 --skip it_fails --skip sometimes --skip it_panics --skip slow` (signal: 11, SIGSEGV: invalid memory reference)
     Running tests/cli.rs (target/debug/deps/cli-8a6a4a56d14e8148)

running 1 test
test it_adds ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

   Doc-tests alpha

running 1 test
test alpha/src/lib.rs - add (line 3) ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

all doctests ran in 0.22s; merged doctests compilation took 0.22s
error: 1 target failed:
    `-p alpha --lib`
"###;

/// `cargo test -- -Z unstable-options --format json 2>&1`.
pub(super) const LIBTEST_JSON: &str = r###"    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.01s
     Running unittests src/lib.rs (target/debug/deps/alpha-e62994b938fd5803)
{ "type": "suite", "event": "started", "test_count": 3 }
{ "type": "test", "event": "started", "name": "tests::it_adds" }
{ "type": "test", "event": "started", "name": "tests::it_fails" }
{ "type": "test", "name": "tests::it_adds", "event": "ok" }
{ "type": "test", "event": "started", "name": "tests::it_is_slow" }
{ "type": "test", "name": "tests::it_is_slow", "event": "ignored", "message": "slow" }
{ "type": "test", "name": "tests::it_fails", "event": "failed", "stdout": "\nthread 'tests::it_fails' (19864) panicked at alpha/src/lib.rs:14:21:\nassertion `left == right` failed\n  left: 2\n right: 3\nstack backtrace:\n   0: __rustc::rust_begin_unwind\n             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/panicking.rs:689:5\n   1: core::panicking::panic_fmt\n             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:80:14\n   2: core::panicking::assert_failed_inner\n             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:439:17\n   3: core::panicking::assert_failed::<i32, i32>\n             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:394:5\n   4: alpha::tests::it_fails\n             at ./src/lib.rs:14:21\n   5: alpha::tests::it_fails::{{closure}}\n             at ./src/lib.rs:14:18\n   6: core::ops::function::FnOnce::call_once\n             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ops/function.rs:250:5\n   7: <fn() -> core::result::Result<(), alloc::string::String> as core::ops::function::FnOnce<()>>::call_once\n             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ops/function.rs:250:5\nnote: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.\n" }
{ "type": "suite", "event": "failed", "passed": 1, "failed": 1, "ignored": 1, "measured": 0, "filtered_out": 3, "exec_time": 0.106724885 }
error: test failed, to rerun pass `-p alpha --lib`
"###;

/// `cargo nextest run --no-fail-fast 2>&1` (nextest 0.9.143).
pub(super) const NEXTEST: &str = r###"    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.01s
────────────
 Nextest run ID 250e30da-2330-4dc9-adf7-66c853cb3daa with nextest profile: default
    Starting 5 tests across 3 binaries (1 test skipped)
        PASS [   0.004s] (1/5) alpha tests::it_adds
        PASS [   0.100s] (2/5) alpha tests::it_panics
        PASS [   0.006s] (3/5) alpha::cli it_adds
        PASS [   0.005s] (4/5) beta::bin/beta tests::it_adds
        FAIL [   0.124s] (5/5) alpha tests::it_fails
  stdout ───

    running 1 test
    test tests::it_fails ... FAILED

    failures:

    failures:
        tests::it_fails

    test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 3 filtered out; finished in 0.11s

  stderr ───

    thread 'tests::it_fails' (7772) panicked at alpha/src/lib.rs:14:21:
    assertion `left == right` failed
      left: 2
     right: 3
    stack backtrace:
       0: __rustc::rust_begin_unwind
                 at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/panicking.rs:689:5
       1: core::panicking::panic_fmt
                 at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:80:14
       2: core::panicking::assert_failed_inner
                 at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:439:17
       3: core::panicking::assert_failed::<i32, i32>
                 at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:394:5
       4: alpha::tests::it_fails
                 at ./src/lib.rs:14:21
       5: alpha::tests::it_fails::{{closure}}
                 at ./src/lib.rs:14:18
       6: core::ops::function::FnOnce::call_once
                 at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ops/function.rs:250:5
       7: <fn() -> core::result::Result<(), alloc::string::String> as core::ops::function::FnOnce<()>>::call_once
                 at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ops/function.rs:250:5
    note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.

────────────
     Summary [   0.125s] 5 tests run: 4 passed, 1 failed, 1 skipped
        FAIL [   0.124s] (5/5) alpha tests::it_fails
error: test run failed
"###;

/// `cargo nextest run --retries 1 --status-level all --final-status-level all 2>&1`.
pub(super) const NEXTEST_RETRIES: &str = r###"   Compiling alpha v0.1.0 (/tmp/rsproj/alpha)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.26s
────────────
 Nextest run ID 0b446412-049f-44aa-a554-c0e335f71e35 with nextest profile: default
    Starting 7 tests across 3 binaries (1 test skipped)
  TRY 1 SEGV [   0.014s] (───) alpha flaky::segv
  stdout ───

    running 1 test

    (test aborted with signal 11: SIGSEGV)

  TRY 2 SEGV [   0.012s] (1/7) alpha flaky::segv
  stdout ───

    running 1 test

    (test aborted with signal 11: SIGSEGV)

        PASS [   0.006s] (2/7) alpha tests::it_adds
        SKIP [         ] (───) alpha tests::it_is_slow
  TRY 1 FAIL [   0.137s] (───) alpha flaky::sometimes
  stdout ───

    running 1 test
    test flaky::sometimes ... FAILED

    failures:

    failures:
        flaky::sometimes

    test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 5 filtered out; finished in 0.13s

  stderr ───

    thread 'flaky::sometimes' (8007) panicked at alpha/src/lib.rs:27:60:
    first time fails
    stack backtrace:
       0: __rustc::rust_begin_unwind
                 at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/panicking.rs:689:5
       1: core::panicking::panic_fmt
                 at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:80:14
       2: alpha::flaky::sometimes
                 at ./src/lib.rs:27:60
       3: alpha::flaky::sometimes::{{closure}}
                 at ./src/lib.rs:25:19
       4: core::ops::function::FnOnce::call_once
                 at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ops/function.rs:250:5
       5: <fn() -> core::result::Result<(), alloc::string::String> as core::ops::function::FnOnce<()>>::call_once
                 at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ops/function.rs:250:5
    note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.

  TRY 2 PASS [   0.007s] (3/7) alpha flaky::sometimes
  TRY 1 FAIL [   0.134s] (───) alpha tests::it_fails
  stdout ───

    running 1 test
    test tests::it_fails ... FAILED

    failures:

    failures:
        tests::it_fails

    test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 5 filtered out; finished in 0.12s

  stderr ───

    thread 'tests::it_fails' (8013) panicked at alpha/src/lib.rs:14:21:
    assertion `left == right` failed
      left: 2
     right: 3
    stack backtrace:
       0: __rustc::rust_begin_unwind
                 at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/panicking.rs:689:5
       1: core::panicking::panic_fmt
                 at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:80:14
       2: core::panicking::assert_failed_inner
                 at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:439:17
       3: core::panicking::assert_failed::<i32, i32>
                 at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:394:5
       4: alpha::tests::it_fails
                 at ./src/lib.rs:14:21
       5: alpha::tests::it_fails::{{closure}}
                 at ./src/lib.rs:14:18
       6: core::ops::function::FnOnce::call_once
                 at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ops/function.rs:250:5
       7: <fn() -> core::result::Result<(), alloc::string::String> as core::ops::function::FnOnce<()>>::call_once
                 at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ops/function.rs:250:5
    note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.

        PASS [   0.127s] (4/7) alpha tests::it_panics
        PASS [   0.007s] (5/7) alpha::cli it_adds
        PASS [   0.007s] (6/7) beta::bin/beta tests::it_adds
  TRY 2 FAIL [   0.128s] (7/7) alpha tests::it_fails
  stdout ───

    running 1 test
    test tests::it_fails ... FAILED

    failures:

    failures:
        tests::it_fails

    test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 5 filtered out; finished in 0.12s

  stderr ───

    thread 'tests::it_fails' (8019) panicked at alpha/src/lib.rs:14:21:
    assertion `left == right` failed
      left: 2
     right: 3
    stack backtrace:
       0: __rustc::rust_begin_unwind
                 at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/panicking.rs:689:5
       1: core::panicking::panic_fmt
                 at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:80:14
       2: core::panicking::assert_failed_inner
                 at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:439:17
       3: core::panicking::assert_failed::<i32, i32>
                 at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:394:5
       4: alpha::tests::it_fails
                 at ./src/lib.rs:14:21
       5: alpha::tests::it_fails::{{closure}}
                 at ./src/lib.rs:14:18
       6: core::ops::function::FnOnce::call_once
                 at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ops/function.rs:250:5
       7: <fn() -> core::result::Result<(), alloc::string::String> as core::ops::function::FnOnce<()>>::call_once
                 at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ops/function.rs:250:5
    note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.

────────────
     Summary [   0.298s] 7 tests run: 5 passed (1 flaky), 2 failed, 1 skipped
        PASS [   0.006s] (2/7) alpha tests::it_adds
        PASS [   0.127s] (4/7) alpha tests::it_panics
        PASS [   0.007s] (5/7) alpha::cli it_adds
        PASS [   0.007s] (6/7) beta::bin/beta tests::it_adds
        SKIP [         ] (───) alpha tests::it_is_slow
   FLAKY 2/2 [   0.007s] (3/7) alpha flaky::sometimes
  TRY 2 SEGV [   0.012s] (1/7) alpha flaky::segv
  TRY 2 FAIL [   0.128s] (7/7) alpha tests::it_fails
error: test run failed
"###;

/// `NEXTEST_EXPERIMENTAL_LIBTEST_JSON=1 cargo nextest run --message-format libtest-json`
/// (stdout).
pub(super) const NEXTEST_LIBTEST_JSON: &str = r###"{"type":"suite","event":"started","test_count":4}
{"type":"test","event":"started","name":"alpha::alpha$tests::it_is_slow"}
{"type":"test","event":"started","name":"alpha::alpha$tests::it_fails"}
{"type":"test","event":"started","name":"alpha::alpha$tests::it_adds"}
{"type":"test","event":"ignored","name":"alpha::alpha$tests::it_is_slow"}
{"type":"test","event":"ok","name":"alpha::alpha$tests::it_adds","exec_time":0.004638576}
{"type":"test","event":"started","name":"alpha::alpha$tests::it_panics"}
{"type":"test","event":"ok","name":"alpha::alpha$tests::it_panics","exec_time":0.098384313}
{"type":"suite","event":"ok","passed":2,"failed":0,"ignored":1,"measured":0,"filtered_out":0,"exec_time":0.103022889}
{"type":"suite","event":"started","test_count":1}
{"type":"test","event":"started","name":"alpha::cli$it_adds"}
{"type":"test","event":"ok","name":"alpha::cli$it_adds","exec_time":0.007200729}
{"type":"suite","event":"ok","passed":1,"failed":0,"ignored":0,"measured":0,"filtered_out":0,"exec_time":0.007200729}
{"type":"suite","event":"started","test_count":1}
{"type":"test","event":"started","name":"beta::beta$tests::it_adds"}
{"type":"test","event":"ok","name":"beta::beta$tests::it_adds","exec_time":0.00872432}
{"type":"suite","event":"ok","passed":1,"failed":0,"ignored":0,"measured":0,"filtered_out":0,"exec_time":0.00872432}
{"type":"suite","event":"started","test_count":4}
{"type":"test","event":"failed","name":"alpha::alpha$tests::it_fails","exec_time":0.125579254,"stdout":"\nthread 'tests::it_fails' (7817) panicked at alpha/src/lib.rs:14:21:\nassertion `left == right` failed\n  left: 2\n right: 3\nstack backtrace:\n   0: __rustc::rust_begin_unwind\n             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/std/src/panicking.rs:689:5\n   1: core::panicking::panic_fmt\n             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:80:14\n   2: core::panicking::assert_failed_inner\n             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:439:17\n   3: core::panicking::assert_failed::<i32, i32>\n             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/panicking.rs:394:5\n   4: alpha::tests::it_fails\n             at ./src/lib.rs:14:21\n   5: alpha::tests::it_fails::{{closure}}\n             at ./src/lib.rs:14:18\n   6: core::ops::function::FnOnce::call_once\n             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ops/function.rs:250:5\n   7: <fn() -> core::result::Result<(), alloc::string::String> as core::ops::function::FnOnce<()>>::call_once\n             at /rustc/59807616e1fa2540724bfbac14d7976d7e4a3860/library/core/src/ops/function.rs:250:5\nnote: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.\n"}
{"type":"suite","event":"failed","passed":0,"failed":1,"ignored":1,"measured":0,"filtered_out":2,"exec_time":0.125579254}
"###;

/// `go test -json ./...` (go 1.19).
pub(super) const GO_TEST_JSON: &str = r###"{"Time":"2026-11-30T13:27:54.793687108Z","Action":"run","Package":"example.com/goproj/calc","Test":"TestAdd"}
{"Time":"2026-11-30T13:27:54.793779756Z","Action":"output","Package":"example.com/goproj/calc","Test":"TestAdd","Output":"=== RUN   TestAdd\n"}
{"Time":"2026-11-30T13:27:54.793827506Z","Action":"output","Package":"example.com/goproj/calc","Test":"TestAdd","Output":"--- PASS: TestAdd (0.00s)\n"}
{"Time":"2026-11-30T13:27:54.793846108Z","Action":"pass","Package":"example.com/goproj/calc","Test":"TestAdd","Elapsed":0}
{"Time":"2026-11-30T13:27:54.793851128Z","Action":"run","Package":"example.com/goproj/calc","Test":"TestSub"}
{"Time":"2026-11-30T13:27:54.793858799Z","Action":"output","Package":"example.com/goproj/calc","Test":"TestSub","Output":"=== RUN   TestSub\n"}
{"Time":"2026-11-30T13:27:54.793898224Z","Action":"output","Package":"example.com/goproj/calc","Test":"TestSub","Output":"    calc_test.go:12: checking\n"}
{"Time":"2026-11-30T13:27:54.793911948Z","Action":"output","Package":"example.com/goproj/calc","Test":"TestSub","Output":"    calc_test.go:13: want 0, got 1\n"}
{"Time":"2026-11-30T13:27:54.793935565Z","Action":"output","Package":"example.com/goproj/calc","Test":"TestSub","Output":"--- FAIL: TestSub (0.00s)\n"}
{"Time":"2026-11-30T13:27:54.793952573Z","Action":"fail","Package":"example.com/goproj/calc","Test":"TestSub","Elapsed":0}
{"Time":"2026-11-30T13:27:54.793955467Z","Action":"run","Package":"example.com/goproj/calc","Test":"TestSkip"}
{"Time":"2026-11-30T13:27:54.793957731Z","Action":"output","Package":"example.com/goproj/calc","Test":"TestSkip","Output":"=== RUN   TestSkip\n"}
{"Time":"2026-11-30T13:27:54.793971647Z","Action":"output","Package":"example.com/goproj/calc","Test":"TestSkip","Output":"    calc_test.go:17: later\n"}
{"Time":"2026-11-30T13:27:54.794007994Z","Action":"output","Package":"example.com/goproj/calc","Test":"TestSkip","Output":"--- SKIP: TestSkip (0.00s)\n"}
{"Time":"2026-11-30T13:27:54.794024217Z","Action":"skip","Package":"example.com/goproj/calc","Test":"TestSkip","Elapsed":0}
{"Time":"2026-11-30T13:27:54.794026931Z","Action":"run","Package":"example.com/goproj/calc","Test":"TestTable"}
{"Time":"2026-11-30T13:27:54.794029047Z","Action":"output","Package":"example.com/goproj/calc","Test":"TestTable","Output":"=== RUN   TestTable\n"}
{"Time":"2026-11-30T13:27:54.794047366Z","Action":"run","Package":"example.com/goproj/calc","Test":"TestTable/zero"}
{"Time":"2026-11-30T13:27:54.794049633Z","Action":"output","Package":"example.com/goproj/calc","Test":"TestTable/zero","Output":"=== RUN   TestTable/zero\n"}
{"Time":"2026-11-30T13:27:54.794077199Z","Action":"run","Package":"example.com/goproj/calc","Test":"TestTable/one_two"}
{"Time":"2026-11-30T13:27:54.79408002Z","Action":"output","Package":"example.com/goproj/calc","Test":"TestTable/one_two","Output":"=== RUN   TestTable/one_two\n"}
{"Time":"2026-11-30T13:27:54.794099012Z","Action":"run","Package":"example.com/goproj/calc","Test":"TestTable/bad"}
{"Time":"2026-11-30T13:27:54.79410159Z","Action":"output","Package":"example.com/goproj/calc","Test":"TestTable/bad","Output":"=== RUN   TestTable/bad\n"}
{"Time":"2026-11-30T13:27:54.794117048Z","Action":"output","Package":"example.com/goproj/calc","Test":"TestTable/bad","Output":"    calc_test.go:25: bad case\n"}
{"Time":"2026-11-30T13:27:54.794138286Z","Action":"output","Package":"example.com/goproj/calc","Test":"TestTable","Output":"--- FAIL: TestTable (0.00s)\n"}
{"Time":"2026-11-30T13:27:54.794151438Z","Action":"output","Package":"example.com/goproj/calc","Test":"TestTable/zero","Output":"    --- PASS: TestTable/zero (0.00s)\n"}
{"Time":"2026-11-30T13:27:54.794154548Z","Action":"pass","Package":"example.com/goproj/calc","Test":"TestTable/zero","Elapsed":0}
{"Time":"2026-11-30T13:27:54.794156853Z","Action":"output","Package":"example.com/goproj/calc","Test":"TestTable/one_two","Output":"    --- PASS: TestTable/one_two (0.00s)\n"}
{"Time":"2026-11-30T13:27:54.794159142Z","Action":"pass","Package":"example.com/goproj/calc","Test":"TestTable/one_two","Elapsed":0}
{"Time":"2026-11-30T13:27:54.794161028Z","Action":"output","Package":"example.com/goproj/calc","Test":"TestTable/bad","Output":"    --- FAIL: TestTable/bad (0.00s)\n"}
{"Time":"2026-11-30T13:27:54.794179552Z","Action":"fail","Package":"example.com/goproj/calc","Test":"TestTable/bad","Elapsed":0}
{"Time":"2026-11-30T13:27:54.794182105Z","Action":"fail","Package":"example.com/goproj/calc","Test":"TestTable","Elapsed":0}
{"Time":"2026-11-30T13:27:54.794184263Z","Action":"output","Package":"example.com/goproj/calc","Output":"FAIL\n"}
{"Time":"2026-11-30T13:27:54.794382362Z","Action":"output","Package":"example.com/goproj/calc","Output":"FAIL\texample.com/goproj/calc\t0.003s\n"}
{"Time":"2026-11-30T13:27:54.794388118Z","Action":"fail","Package":"example.com/goproj/calc","Elapsed":0.003}
"###;

/// `go test -json 2>&1` with a panicking test, a package without tests and one that does
/// not build.
pub(super) const GO_TEST_JSON_BROKEN: &str = r###"# example.com/goproj/broken [example.com/goproj/broken.test]
broken/b_test.go:5:28: undefined: undefinedThing
{"Time":"2026-11-30T13:35:14.859637629Z","Action":"run","Package":"example.com/goproj/boom","Test":"TestFine"}
{"Time":"2026-11-30T13:35:14.85976971Z","Action":"output","Package":"example.com/goproj/boom","Test":"TestFine","Output":"=== RUN   TestFine\n"}
{"Time":"2026-11-30T13:35:14.85978118Z","Action":"output","Package":"example.com/goproj/boom","Test":"TestFine","Output":"--- PASS: TestFine (0.00s)\n"}
{"Time":"2026-11-30T13:35:14.859785431Z","Action":"pass","Package":"example.com/goproj/boom","Test":"TestFine","Elapsed":0}
{"Time":"2026-11-30T13:35:14.859790451Z","Action":"run","Package":"example.com/goproj/boom","Test":"TestPanics"}
{"Time":"2026-11-30T13:35:14.859798904Z","Action":"output","Package":"example.com/goproj/boom","Test":"TestPanics","Output":"=== RUN   TestPanics\n"}
{"Time":"2026-11-30T13:35:14.859802695Z","Action":"output","Package":"example.com/goproj/boom","Test":"TestPanics","Output":"--- FAIL: TestPanics (0.00s)\n"}
{"Time":"2026-11-30T13:35:14.862685752Z","Action":"output","Package":"example.com/goproj/boom","Test":"TestPanics","Output":"panic: assignment to entry in nil map [recovered]\n"}
{"Time":"2026-11-30T13:35:14.862970553Z","Action":"output","Package":"example.com/goproj/boom","Test":"TestPanics","Output":"\tpanic: assignment to entry in nil map\n"}
{"Time":"2026-11-30T13:35:14.862977756Z","Action":"output","Package":"example.com/goproj/boom","Test":"TestPanics","Output":"\n"}
{"Time":"2026-11-30T13:35:14.862981009Z","Action":"output","Package":"example.com/goproj/boom","Test":"TestPanics","Output":"goroutine 19 [running]:\n"}
{"Time":"2026-11-30T13:35:14.862984442Z","Action":"output","Package":"example.com/goproj/boom","Test":"TestPanics","Output":"testing.tRunner.func1.2({0x508ec0, 0x551ca0})\n"}
{"Time":"2026-11-30T13:35:14.862987279Z","Action":"output","Package":"example.com/goproj/boom","Test":"TestPanics","Output":"\t/usr/lib/go-1.19/src/testing/testing.go:1396 +0x24e\n"}
{"Time":"2026-11-30T13:35:14.862989955Z","Action":"output","Package":"example.com/goproj/boom","Test":"TestPanics","Output":"testing.tRunner.func1()\n"}
{"Time":"2026-11-30T13:35:14.862992225Z","Action":"output","Package":"example.com/goproj/boom","Test":"TestPanics","Output":"\t/usr/lib/go-1.19/src/testing/testing.go:1399 +0x39f\n"}
{"Time":"2026-11-30T13:35:14.862994687Z","Action":"output","Package":"example.com/goproj/boom","Test":"TestPanics","Output":"panic({0x508ec0, 0x551ca0})\n"}
{"Time":"2026-11-30T13:35:14.86299711Z","Action":"output","Package":"example.com/goproj/boom","Test":"TestPanics","Output":"\t/usr/lib/go-1.19/src/runtime/panic.go:884 +0x212\n"}
{"Time":"2026-11-30T13:35:14.862999657Z","Action":"output","Package":"example.com/goproj/boom","Test":"TestPanics","Output":"example.com/goproj/boom.TestPanics(0xc000096820?)\n"}
{"Time":"2026-11-30T13:35:14.863001901Z","Action":"output","Package":"example.com/goproj/boom","Test":"TestPanics","Output":"\t/tmp/goproj/boom/boom_test.go:9 +0x2e\n"}
{"Time":"2026-11-30T13:35:14.863004138Z","Action":"output","Package":"example.com/goproj/boom","Test":"TestPanics","Output":"testing.tRunner(0xc000096b60, 0x52f2f8)\n"}
{"Time":"2026-11-30T13:35:14.863006196Z","Action":"output","Package":"example.com/goproj/boom","Test":"TestPanics","Output":"\t/usr/lib/go-1.19/src/testing/testing.go:1446 +0x10b\n"}
{"Time":"2026-11-30T13:35:14.863008347Z","Action":"output","Package":"example.com/goproj/boom","Test":"TestPanics","Output":"created by testing.(*T).Run\n"}
{"Time":"2026-11-30T13:35:14.863010489Z","Action":"output","Package":"example.com/goproj/boom","Test":"TestPanics","Output":"\t/usr/lib/go-1.19/src/testing/testing.go:1493 +0x35f\n"}
{"Time":"2026-11-30T13:35:14.8630428Z","Action":"fail","Package":"example.com/goproj/boom","Test":"TestPanics","Elapsed":0}
{"Time":"2026-11-30T13:35:14.863047261Z","Action":"output","Package":"example.com/goproj/boom","Output":"FAIL\texample.com/goproj/boom\t0.005s\n"}
{"Time":"2026-11-30T13:35:14.863050496Z","Action":"fail","Package":"example.com/goproj/boom","Elapsed":0.005}
{"Time":"2026-11-30T13:35:14.863587328Z","Action":"output","Package":"example.com/goproj/notests","Output":"?   \texample.com/goproj/notests\t[no test files]\n"}
{"Time":"2026-11-30T13:35:14.863616272Z","Action":"skip","Package":"example.com/goproj/notests","Elapsed":0}
FAIL	example.com/goproj/broken [build failed]
"###;

/// TAP 13 with a YAML block, an escaped #, SKIP and TODO (written by hand).
pub(super) const TAP13: &str = r###"TAP version 13
1..6
# parser
ok 1 - parses an empty file
not ok 2 - rejects a \# in a name
  ---
  message: 'expected an error'
  severity: fail
  data:
    got:
        ok 7 - output that looks like a test point
    expect: error
  ...
ok 3 - handles unicode # SKIP no ICU on this host
not ok 4 - streams large input # TODO not implemented
# cache
ok 5     caches   results
ok 6
# tests 6
# pass 3
"###;

/// `node --test --test-reporter=tap` (node 20): subtests, SKIP, TODO.
pub(super) const NODE_TAP: &str = r###"TAP version 13
# Subtest: adds
ok 1 - adds
  ---
  duration_ms: 1.585427
  ...
# Subtest: group
    # Subtest: inner ok
    ok 1 - inner ok
      ---
      duration_ms: 0.223352
      ...
    # Subtest: inner bad
    not ok 2 - inner bad
      ---
      duration_ms: 1.870359
      location: '/tmp/nodet/a.test.js:6:11'
      failureType: 'testCodeFailure'
      error: |-
        Expected values to be strictly equal:
        
        1 !== 2
        
      code: 'ERR_ASSERTION'
      name: 'AssertionError'
      expected: 2
      actual: 1
      operator: 'strictEqual'
      stack: |-
        TestContext.<anonymous> (/tmp/nodet/a.test.js:6:44)
        Test.runInAsyncScope (node:async_hooks:206:9)
        Test.run (node:internal/test_runner/test:796:25)
        Test.start (node:internal/test_runner/test:702:17)
        TestContext.test (node:internal/test_runner/test:292:20)
        TestContext.<anonymous> (/tmp/nodet/a.test.js:6:11)
        async Test.run (node:internal/test_runner/test:797:9)
        async Test.processPendingSubtests (node:internal/test_runner/test:526:7)
      ...
    1..2
not ok 2 - group
  ---
  duration_ms: 2.901949
  location: '/tmp/nodet/a.test.js:4:1'
  failureType: 'subtestsFailed'
  error: '1 subtest failed'
  code: 'ERR_TEST_FAILURE'
  ...
# Subtest: skipped one
ok 3 - skipped one # SKIP no network
  ---
  duration_ms: 0.213424
  ...
# Subtest: todo one
not ok 4 - todo one # TODO
  ---
  duration_ms: 0.137658
  location: '/tmp/nodet/a.test.js:9:1'
  failureType: 'testCodeFailure'
  error: 'x'
  code: 'ERR_TEST_FAILURE'
  stack: |-
    TestContext.<anonymous> (/tmp/nodet/a.test.js:9:48)
    Test.runInAsyncScope (node:async_hooks:206:9)
    Test.run (node:internal/test_runner/test:796:25)
    Test.processPendingSubtests (node:internal/test_runner/test:526:18)
    Test.postRun (node:internal/test_runner/test:889:19)
    Test.run (node:internal/test_runner/test:835:12)
    async Test.processPendingSubtests (node:internal/test_runner/test:526:7)
  ...
1..4
# tests 6
# suites 0
# pass 2
# fail 2
# cancelled 0
# skipped 1
# todo 1
# duration_ms 139.662798
"###;

/// `prove -v` over two TAP files.
pub(super) const PROVE_VERBOSE: &str = r###"t/a.t .. 
TAP version 13
1..3
ok 1 - first thing
not ok 2 - second # TODO not yet
ok 3 # SKIP no db
ok
t/b.t .. 
1..2
ok 1 - alpha
not ok 2 - beta
  ---
  message: bad
  ...
Failed 1/2 subtests 

Test Summary Report
-------------------
t/b.t (Wstat: 0 Tests: 2 Failed: 1)
  Failed test:  2
Files=2, Tests=5,  0 wallclock secs ( 0.03 usr +  0.02 sys =  0.05 CPU)
Result: FAIL
"###;

/// `cargo test -q --no-fail-fast 2>&1` (cargo 1.95): libtest's terse format names only failures.
pub(super) const CARGO_TEST_QUIET: &str = r###"
running 4 tests
.i 2/4
tests::subtracts --- FAILED
.
failures:

---- tests::subtracts stdout ----

thread 'tests::subtracts' (11734) panicked at src/lib.rs:28:9:
assertion `left == right` failed
  left: 4
 right: 2
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace


failures:
    tests::subtracts

test result: FAILED. 2 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s

error: test failed, to rerun pass `--lib`

running 1 test
.
test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s


running 2 tests
. 1/2
it_subtracts --- FAILED

failures:

---- it_subtracts stdout ----

thread 'it_subtracts' (11741) panicked at tests/cli.rs:8:5:
assertion `left == right` failed
  left: 8
 right: 2
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace


failures:
    it_subtracts

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s

error: test failed, to rerun pass `--test cli`

running 2 tests
src/lib.rs - sub (line 12) --- FAILED
.
failures:

---- src/lib.rs - sub (line 12) stdout ----
Test executable failed (exit status: 101).

stderr:

thread 'main' (11791) panicked at /tmp/rustdoctestevmADh/doctest_bundle_2024.rs:14:1:
assertion `left == right` failed
  left: 4
 right: 2
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace



failures:
    src/lib.rs - sub (line 12)

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

all doctests ran in 0.30s; merged doctests compilation took 0.30s
error: doctest failed, to rerun pass `--doc`
error: 3 targets failed:
    `--lib`
    `--test cli`
    `--doc`
"###;

/// `cargo nextest run --no-fail-fast --status-level fail --final-status-level none 2>&1`
/// (nextest 0.9.143): passed tests are counted, not named.
pub(super) const NEXTEST_STATUS_FAIL: &str = r###"    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.01s
────────────
 Nextest run ID e22a1dfc-2405-4097-a56d-2e4a28aeed74 with nextest profile: default
    Starting 6 tests across 3 binaries (1 test skipped)
        FAIL [   0.008s] (3/6) calc tests::subtracts
  stdout ───

    running 1 test
    test tests::subtracts ... FAILED

    failures:

    failures:
        tests::subtracts

    test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 3 filtered out; finished in 0.00s

  stderr ───

    thread 'tests::subtracts' (11843) panicked at src/lib.rs:28:9:
    assertion `left == right` failed
      left: 4
     right: 2
    note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace

        FAIL [   0.009s] (5/6) calc::cli it_subtracts
  stdout ───

    running 1 test
    test it_subtracts ... FAILED

    failures:

    failures:
        it_subtracts

    test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 1 filtered out; finished in 0.00s

  stderr ───

    thread 'it_subtracts' (11848) panicked at tests/cli.rs:8:5:
    assertion `left == right` failed
      left: 8
     right: 2
    note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace

────────────
     Summary [   0.026s] 6 tests run: 4 passed, 2 failed, 1 skipped
error: test run failed
"###;

/// `NEXTEST_EXPERIMENTAL_LIBTEST_JSON=1 cargo nextest run --no-fail-fast --message-format
/// libtest-json 2>&1`: status lines and JSON interleaved; the lib and the bin are both
/// `calc::calc` in the JSON.
pub(super) const NEXTEST_LIBTEST_JSON_MERGED: &str = r###"    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.02s
────────────
 Nextest run ID 92917d49-309c-481d-b9fe-3274d8f2fca7 with nextest profile: default
    Starting 6 tests across 3 binaries (1 test skipped)
        PASS [   0.008s] (1/6) calc tests::adds
        PASS [   0.009s] (2/6) calc tests::panics
{"type":"suite","event":"started","test_count":4}
{"type":"test","event":"started","name":"calc::calc$tests::slow"}
{"type":"test","event":"started","name":"calc::calc$tests::panics"}
{"type":"test","event":"started","name":"calc::calc$tests::adds"}
{"type":"test","event":"ignored","name":"calc::calc$tests::slow"}
{"type":"test","event":"ok","name":"calc::calc$tests::adds","exec_time":0.007635211}
{"type":"test","event":"started","name":"calc::calc$tests::subtracts"}
{"type":"test","event":"ok","name":"calc::calc$tests::panics","exec_time":0.008552348}
{"type":"suite","event":"ok","passed":2,"failed":0,"ignored":1,"measured":0,"filtered_out":0,"exec_time":0.016187559}
        FAIL [   0.005s] (3/6) calc tests::subtracts
  output ───

    running 1 test

    thread 'tests::subtracts' (11903) panicked at src/lib.rs:28:9:
    assertion `left == right` failed
      left: 4
     right: 2
    note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
    test tests::subtracts ... FAILED

    failures:

    failures:
        tests::subtracts

    test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 3 filtered out; finished in 0.00s


        FAIL [   0.005s] (4/6) calc::cli it_subtracts
  output ───

    running 1 test

    thread 'it_subtracts' (11905) panicked at tests/cli.rs:8:5:
    assertion `left == right` failed
      left: 8
     right: 2
    note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
    test it_subtracts ... FAILED

    failures:

    failures:
        it_subtracts

    test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 1 filtered out; finished in 0.00s


        PASS [   0.011s] (5/6) calc::cli it_adds
{"type":"suite","event":"started","test_count":2}
{"type":"test","event":"started","name":"calc::cli$it_adds"}
{"type":"test","event":"started","name":"calc::cli$it_subtracts"}
{"type":"test","event":"failed","name":"calc::cli$it_subtracts","exec_time":0.004879655,"stdout":"\nthread 'it_subtracts' (11905) panicked at tests/cli.rs:8:5:\nassertion `left == right` failed\n  left: 8\n right: 2\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"}
{"type":"test","event":"ok","name":"calc::cli$it_adds","exec_time":0.010996777}
{"type":"suite","event":"failed","passed":1,"failed":1,"ignored":0,"measured":0,"filtered_out":0,"exec_time":0.015876432}
        PASS [   0.007s] (6/6) calc::bin/calc tests::runs
{"type":"suite","event":"started","test_count":1}
{"type":"test","event":"started","name":"calc::calc$tests::runs"}
{"type":"test","event":"ok","name":"calc::calc$tests::runs","exec_time":0.007210553}
{"type":"suite","event":"ok","passed":1,"failed":0,"ignored":0,"measured":0,"filtered_out":0,"exec_time":0.007210553}
────────────
     Summary [   0.027s] 6 tests run: 4 passed, 2 failed, 1 skipped
        FAIL [   0.005s] (3/6) calc tests::subtracts
        FAIL [   0.005s] (4/6) calc::cli it_subtracts
{"type":"suite","event":"started","test_count":4}
{"type":"test","event":"failed","name":"calc::calc$tests::subtracts","exec_time":0.004559094,"stdout":"\nthread 'tests::subtracts' (11903) panicked at src/lib.rs:28:9:\nassertion `left == right` failed\n  left: 4\n right: 2\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"}
{"type":"suite","event":"failed","passed":0,"failed":1,"ignored":1,"measured":0,"filtered_out":2,"exec_time":0.004559094}
error: test run failed
"###;

/// The JUnit report of `cargo nextest run --profile ci` with `[profile.ci.junit] path =
/// "junit.xml"` (nextest 0.9.143).
pub(super) const NEXTEST_JUNIT: &str = r###"<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="nextest-run" tests="6" skipped="0" failures="2" errors="0" uuid="ffcffab0-1001-4748-a7e2-736a3b2d683e" timestamp="2026-11-30T15:52:53.798+00:00" time="0.029">
    <testsuite name="calc" tests="3" skipped="0" errors="0" failures="1">
        <testcase name="tests::panics" classname="calc" timestamp="2026-11-30T15:52:53.798+00:00" time="0.006"/>
        <testcase name="tests::subtracts" classname="calc" timestamp="2026-11-30T15:52:53.804+00:00" time="0.006">
            <failure message="thread &apos;tests::subtracts&apos; (11974) panicked at src/lib.rs:28:9" type="test failure with exit code 101">thread &apos;tests::subtracts&apos; (11974) panicked at src/lib.rs:28:9:
assertion `left == right` failed
  left: 4
 right: 2
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace</failure>
            <system-out>
running 1 test
test tests::subtracts ... FAILED

failures:

failures:
    tests::subtracts

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 3 filtered out; finished in 0.00s

</system-out>
            <system-err>
thread &apos;tests::subtracts&apos; (11974) panicked at src/lib.rs:28:9:
assertion `left == right` failed
  left: 4
 right: 2
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
</system-err>
        </testcase>
        <testcase name="tests::adds" classname="calc" timestamp="2026-11-30T15:52:53.799+00:00" time="0.012"/>
    </testsuite>
    <testsuite name="calc::cli" tests="2" skipped="0" errors="0" failures="1">
        <testcase name="it_subtracts" classname="calc::cli" timestamp="2026-11-30T15:52:53.811+00:00" time="0.010">
            <failure message="thread &apos;it_subtracts&apos; (11979) panicked at tests/cli.rs:8:5" type="test failure with exit code 101">thread &apos;it_subtracts&apos; (11979) panicked at tests/cli.rs:8:5:
assertion `left == right` failed
  left: 8
 right: 2
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace</failure>
            <system-out>
running 1 test
test it_subtracts ... FAILED

failures:

failures:
    it_subtracts

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 1 filtered out; finished in 0.00s

</system-out>
            <system-err>
thread &apos;it_subtracts&apos; (11979) panicked at tests/cli.rs:8:5:
assertion `left == right` failed
  left: 8
 right: 2
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
</system-err>
        </testcase>
        <testcase name="it_adds" classname="calc::cli" timestamp="2026-11-30T15:52:53.811+00:00" time="0.012"/>
    </testsuite>
    <testsuite name="calc::bin/calc" tests="1" skipped="0" errors="0" failures="0">
        <testcase name="tests::runs" classname="calc::bin/calc" timestamp="2026-11-30T15:52:53.821+00:00" time="0.006"/>
    </testsuite>
</testsuites>
"###;
