# Write the bytes of IN as a comma-separated list of hex literals to OUT (for #include in an array initializer).
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUT} "${bytes}\n")
