check "iso_week 2026-01-01" "2026-W01" "$(iso_week 2026-01-01 2>&1)"
check "iso_week 2027-01-01" "2026-W53" "$(iso_week 2027-01-01 2>&1)"
