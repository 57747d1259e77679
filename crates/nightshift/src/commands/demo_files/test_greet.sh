check "greet World" "Hello, World!" "$(greet World 2>&1)"
check "greet night" "Hello, night!" "$(greet night 2>&1)"
