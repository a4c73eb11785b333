-- Tests of deploy/haproxy/session_key.lua outside HAProxy (lua5.3):
-- the routing key of every turn of a conversation is the same, different
-- conversations get different keys, and no input - truncated, mutated,
-- deeply nested, random - makes the scanner fail or loop.
local root = arg[1] or "."
package.path = root .. "/deploy/haproxy/?.lua;" .. package.path
local M = require("session_key")

local failures = 0
local function check(cond, what)
  if not cond then failures = failures + 1; print("FAILED: " .. what) end
end

local sys = '{"role":"system","content":"Be brief. \\"Quoted\\" [brackets] {braces}"}'
local u1 = '{"role":"user","content":"How do I configure the network?"}'
local turn1 = '{"model":"x","messages":[' .. sys .. ',' .. u1 .. '],"max_tokens":8}'
local turn3 = '{"model":"x","messages":[' .. sys .. ',' .. u1 ..
  ',{"role":"assistant","content":"Edit /etc/network/interfaces."},{"role":"user","content":"And DNS?"}],"stream":true}'
check(M.session_key(nil, turn1) == M.session_key(nil, turn3), "turns of one conversation share a key")
check(M.session_key(nil, turn1):sub(1, 2) == "m:", "keyed by the opening messages")
local other = turn1:gsub("configure the network", "install a package")
check(M.session_key(nil, other) ~= M.session_key(nil, turn1), "another conversation gets another key")
check(M.session_key("abc", turn1) == "s:abc", "X-Session-Id wins")
check(M.session_key(nil, '{"user":"u-7","messages":[' .. u1 .. ']}') == "u:u-7", "the user field comes next")
check(M.session_key(nil, '{"system":"S","messages":[' .. u1 .. ']}') ==
      M.session_key(nil, '{"system":"S","messages":[' .. u1 .. ',{"role":"assistant","content":"a"}]}'),
      "Anthropic's top-level system is part of the opening")
check(M.session_key(nil, '{"system":"S1","messages":[' .. u1 .. ']}') ~=
      M.session_key(nil, '{"system":"S2","messages":[' .. u1 .. ']}'), "different system prompts differ")
check(M.session_key(nil, '{"prompt":"Once upon a time"}') == 'p:"Once upon a time"', "completions: the prompt")
check(M.session_key(nil, "") == "" and M.session_key(nil, nil) == "", "no body: no key")
check(M.session_key(nil, "[1,2,3]") == "", "not an object: no key")

-- Fuzz: every prefix of a real body, random byte edits, deep nesting.
math.randomseed(12345)
local function safe(body)
  local ok, key = pcall(M.session_key, nil, body)
  return ok and type(key) == "string"
end
for i = 0, #turn3 do check(safe(turn3:sub(1, i)), "prefix of length " .. i) end
local alphabet = '{}[]",:\\ abc01'
for _ = 1, 20000 do
  local b = {}
  for c in turn3:gmatch(".") do b[#b + 1] = c end
  for _ = 1, math.random(1, 6) do
    local pos = math.random(1, #b)
    local r = math.random(3)
    local ch = alphabet:sub(math.random(#alphabet), math.random(#alphabet))
    if r == 1 then b[pos] = ch elseif r == 2 then table.insert(b, pos, ch) else table.remove(b, pos) end
  end
  local body = table.concat(b)
  if not safe(body) then check(false, "mutated body: " .. body) break end
end
local deep = '{"messages":' .. string.rep("[", 200000) .. string.rep("]", 200000) .. '}'
check(safe(deep), "200,000 levels of nesting")
check(safe('{"messages":[' .. string.rep("[", 100000)), "unterminated nesting")
local random = {}
for i = 1, 100000 do random[i] = string.char(math.random(0, 255)) end
check(safe("{" .. table.concat(random)), "random bytes")

if failures > 0 then print(failures .. " failed") os.exit(1) end
print("session_key: all checks passed")
