//! Human durations: `90s`, `10m`, `1h30m`, `500ms`, `2d`.

use std::time::Duration;

/// The forms a duration may take, for error messages.
pub const DURATION_FORMS: &str =
    "expected a duration like `90s`, `10m`, `1h30m` or `500ms` (units: ms, s, m, h, d)";

/// Parses a duration written as one or more `<integer><unit>` parts, largest unit first, each
/// unit at most once: `500ms`, `10s`, `90m`, `1h30m`, `2d`. Surrounding whitespace is ignored.
///
/// Rejected: the empty string, a bare number (`10`), signs (`-5m`), fractions (`1.5h`), unknown
/// units (`1x`), repeated or ascending units (`30m1h`), overflow, and zero (`0s`): no timeout,
/// deadline or interval in nightshift is meaningful at zero.
///
/// The error is a lowercase fragment that names the input and says which forms are accepted.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let input = s.trim();
    if input.is_empty() {
        return Err(format!("empty duration; {DURATION_FORMS}"));
    }
    let mut rest = input;
    let mut total = Duration::ZERO;
    let mut previous_rank: Option<u8> = None;
    while !rest.is_empty() {
        let digits_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits_len == 0 {
            return Err(format!("`{input}` is not a duration; {DURATION_FORMS}"));
        }
        let (digits, after) = rest.split_at(digits_len);
        let unit_len = after.bytes().take_while(u8::is_ascii_alphabetic).count();
        if unit_len == 0 {
            return Err(format!(
                "`{input}` has no unit after `{digits}`; {DURATION_FORMS}"
            ));
        }
        let (unit, after) = after.split_at(unit_len);
        let (rank, millis_per_unit): (u8, u64) = match unit {
            "ms" => (0, 1),
            "s" => (1, 1_000),
            "m" => (2, 60_000),
            "h" => (3, 3_600_000),
            "d" => (4, 86_400_000),
            _ => {
                return Err(format!(
                    "unknown unit `{unit}` in `{input}`; {DURATION_FORMS}"
                ));
            }
        };
        if previous_rank.is_some_and(|previous| rank >= previous) {
            return Err(format!(
                "units in `{input}` must go from largest to smallest, each at most once; \
                 {DURATION_FORMS}"
            ));
        }
        previous_rank = Some(rank);
        let part = digits
            .parse::<u64>()
            .ok()
            .and_then(|value| value.checked_mul(millis_per_unit))
            .map(Duration::from_millis);
        total = part
            .and_then(|part| total.checked_add(part))
            .ok_or_else(|| format!("duration `{input}` is too large"))?;
        rest = after;
    }
    if total.is_zero() {
        return Err(format!(
            "duration `{input}` is zero; it must be greater than zero"
        ));
    }
    Ok(total)
}

/// Formats a duration in the form [`parse_duration`] reads, largest unit first and down to
/// milliseconds: `1h30m`, `10m`, `1m0s500ms` is written `1m500ms`. Below one millisecond the
/// result is `0ms`.
pub fn format_duration(duration: Duration) -> String {
    let mut millis = duration.as_millis();
    if millis == 0 {
        return "0ms".to_owned();
    }
    let mut out = String::new();
    for (unit, size) in [("h", 3_600_000u128), ("m", 60_000), ("s", 1_000), ("ms", 1)] {
        let count = millis / size;
        millis %= size;
        if count > 0 {
            out.push_str(&count.to_string());
            out.push_str(unit);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_documented_forms() {
        let good: &[(&str, u64)] = &[
            ("500ms", 500),
            ("10s", 10_000),
            ("90m", 5_400_000),
            ("2h", 7_200_000),
            ("1h30m", 5_400_000),
            ("1h30m15s", 5_415_000),
            ("1m500ms", 60_500),
            ("2d", 172_800_000),
            (" 10m ", 600_000),
            ("0h5m", 300_000),
            ("007s", 7_000),
        ];
        for (input, millis) in good {
            assert_eq!(
                parse_duration(input),
                Ok(Duration::from_millis(*millis)),
                "input {input:?}"
            );
        }
    }

    #[test]
    fn rejects_malformed_input_with_the_accepted_forms() {
        let bad = [
            "",
            "  ",
            "10",
            "-5m",
            "+5m",
            "1x",
            "m",
            "1.5h",
            "1h 30m",
            "30m1h",
            "1h1h",
            "1s1ms1s",
            "0",
            "0s",
            "0h0m",
            "10M",
            "1hour",
            "h1",
            "1h-",
            "99999999999999999999s",
            "18446744073709551615h",
        ];
        for input in bad {
            let Err(error) = parse_duration(input) else {
                panic!("{input:?} was accepted");
            };
            assert!(
                error.contains("expected a duration like")
                    || error.contains("too large")
                    || error.contains("zero"),
                "input {input:?} gave {error:?}"
            );
        }
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert_eq!(
            parse_duration("10").err(),
            Some(format!("`10` has no unit after `10`; {DURATION_FORMS}"))
        );
        assert_eq!(
            parse_duration("1x").err(),
            Some(format!("unknown unit `x` in `1x`; {DURATION_FORMS}"))
        );
        assert_eq!(
            parse_duration("0m").err(),
            Some("duration `0m` is zero; it must be greater than zero".to_owned())
        );
        assert!(
            parse_duration("30m1h")
                .err()
                .is_some_and(|error| error.starts_with("units in `30m1h` must go"))
        );
    }

    #[test]
    fn format_round_trips() -> Result<(), String> {
        for input in ["500ms", "10s", "10m", "1h30m", "1h5s", "1m500ms", "48h"] {
            let parsed = parse_duration(input)?;
            assert_eq!(format_duration(parsed), input);
            assert_eq!(parse_duration(&format_duration(parsed)), Ok(parsed));
        }
        assert_eq!(format_duration(Duration::from_secs(90 * 60)), "1h30m");
        assert_eq!(format_duration(Duration::from_micros(10)), "0ms");
        Ok(())
    }
}
