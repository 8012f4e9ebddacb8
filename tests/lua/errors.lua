-- Errors raised and caught: Lua unwinds the C stack with longjmp.
local function deep(n) if n == 0 then error({code = 7}) end return deep(n - 1) end
local ok, e = pcall(deep, 20)
print("pcall", ok, type(e) == "table" and e.code)
print("xpcall", xpcall(function() error("boom") end, function(m) return "handled: " .. tostring(m):gsub("^.-:%d+: ", "") end))
local n = 0
for i = 1, 50 do
  local ok2 = pcall(function() if i % 3 == 0 then error("x") end n = n + 1 end)
  if not ok2 then n = n + 100 end
end
print("mixed", n)
print("nested", pcall(function() local ok3, m = pcall(error, "inner") return "outer saw " .. m end))
print(select("#", pcall(error)))
