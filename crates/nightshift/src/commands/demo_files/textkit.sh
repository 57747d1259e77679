# textkit: small text helpers for POSIX sh.

# trim TEXT: print TEXT without leading and trailing blanks.
trim() { printf '%s\n' "$1" | sed 's/^[[:space:]]*//; s/[[:space:]]*$//'; }
