check "count_words 'a b  c'" "3" "$(count_words 'a b  c' 2>&1)"
check "count_words ''" "0" "$(count_words '' 2>&1)"
