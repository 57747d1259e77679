check "shout hi" "HI!" "$(shout hi 2>&1)"
check "shout 'wake up'" "WAKE UP!" "$(shout 'wake up' 2>&1)"
