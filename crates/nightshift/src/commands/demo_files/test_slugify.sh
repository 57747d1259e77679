check "slugify 'Hello World'" "hello-world" "$(slugify 'Hello World' 2>&1)"
check "slugify '  Night  Shift! '" "night-shift" "$(slugify '  Night  Shift! ' 2>&1)"
