-- Coroutines, including errors inside them and yields across pcall.
local gen = coroutine.wrap(function() for i = 1, 5 do coroutine.yield(i * i) end end)
local s = 0
for _ = 1, 5 do s = s + gen() end
print("squares", s)
local co = coroutine.create(function(a) local b = coroutine.yield(a + 1) error("in coroutine " .. b) end)
print(coroutine.resume(co, 1))
local ok, msg = coroutine.resume(co, "two")
print(ok, (msg:gsub("^.-:%d+: ", "")))
print(coroutine.status(co))
local co2 = coroutine.wrap(function() pcall(function() coroutine.yield("from inside pcall") end) return "done" end)
print(co2(), co2())
