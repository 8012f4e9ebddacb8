-- Plain work: recursion, strings, tables, closures, sorting.
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
print("fib", fib(15))
local words = {}
for w in ("the quick brown fox jumps over the lazy dog"):gmatch("%a+") do words[#words + 1] = w:upper() end
table.sort(words)
print(table.concat(words, " "))
local function counter() local n = 0 return function() n = n + 1 return n end end
local c = counter()
c() c()
print("counter", c())
print(string.format("%5.2f %d %s", math.pi, 42, tostring(nil)))
