-- Routing key for oscar-server replicas behind HAProxy: the follow-up turns
-- of one conversation must reach the replica whose prefix cache holds it.
--
-- The key is, in order of preference:
--   1. the X-Session-Id request header;
--   2. the top-level "user" field of the JSON body (OpenAI's end-user id);
--   3. the conversation's opening: the top-level "system" value (Anthropic)
--      and the "messages" array up to and including its first user message
--      (every later turn repeats these bytes unchanged);
--   4. the first 256 bytes of a "prompt" or "input" value (completions and
--      Responses: later turns extend the same text).
-- HAProxy hashes the key (xxh64) and picks a replica by consistent hashing.
--
-- The scanner below only skips over JSON values; it never builds them, walks
-- them without recursion, and gives up (empty key: any replica) on anything
-- malformed. The body it sees is at most HAProxy's buffer.

local M = {}

local function skip_ws(s, i)
  return (s:find("[^ \t\r\n]", i)) or (#s + 1)
end

-- Index just past the JSON string starting at s[i] == '"', or nil.
local function skip_string(s, i)
  local j = i + 1
  while true do
    local k = s:find('[\\"]', j)
    if not k then return nil end
    if s:sub(k, k) == '"' then return k + 1 end
    j = k + 2  -- a backslash escapes the next byte
  end
end

-- Index just past the JSON value starting at s[i] (after whitespace), or nil.
function M.skip_value(s, i)
  i = skip_ws(s, i)
  local c = s:sub(i, i)
  if c == '"' then return skip_string(s, i) end
  if c == "{" or c == "[" then
    local depth, j = 0, i
    while j <= #s do
      local k = s:find('[\\"{}%[%]]', j)
      if not k then return nil end
      local ch = s:sub(k, k)
      if ch == '"' then
        local e = skip_string(s, k)
        if not e then return nil end
        j = e
      else
        if ch == "{" or ch == "[" then depth = depth + 1 else depth = depth - 1 end
        j = k + 1
        if depth == 0 then return j end
        if depth < 0 then return nil end
      end
    end
    return nil
  end
  local k = s:find("[,}%] \t\r\n]", i)
  if k == i then return nil end
  return k or (#s + 1)
end

-- Calls visit(key, value_first, value_past) for each member of the
-- top-level object; stops early when visit returns true.
local function each_member(s, visit)
  local i = skip_ws(s, 1)
  if s:sub(i, i) ~= "{" then return end
  i = skip_ws(s, i + 1)
  while i <= #s and s:sub(i, i) == '"' do
    local ke = skip_string(s, i)
    if not ke then return end
    local key = s:sub(i + 1, ke - 2)
    local colon = skip_ws(s, ke)
    if s:sub(colon, colon) ~= ":" then return end
    local vb = skip_ws(s, colon + 1)
    local ve = M.skip_value(s, vb)
    if not ve then return end
    if visit(key, vb, ve) then return end
    i = skip_ws(s, ve)
    if s:sub(i, i) ~= "," then return end
    i = skip_ws(s, i + 1)
  end
end

-- The array's elements up to and including the first one with role "user".
local function opening_messages(s, b, e)
  if s:sub(b, b) ~= "[" then return "" end
  local i, parts = skip_ws(s, b + 1), {}
  while i < e and s:sub(i, i) ~= "]" do
    local ve = M.skip_value(s, i)
    if not ve or ve > e then return "" end
    local item = s:sub(i, ve - 1)
    parts[#parts + 1] = item
    if item:find('"role"%s*:%s*"user"') then break end
    i = skip_ws(s, ve)
    if s:sub(i, i) == "," then i = skip_ws(s, i + 1) end
  end
  return table.concat(parts, ",")
end

function M.session_key(header, body)
  if header and header ~= "" then return "s:" .. header end
  if not body or body == "" then return "" end
  local user, system, messages, text = nil, "", nil, nil
  each_member(body, function(key, b, e)
    if key == "user" and body:sub(b, b) == '"' then user = body:sub(b + 1, e - 2)
    elseif key == "system" then system = body:sub(b, e - 1)
    elseif key == "messages" then messages = opening_messages(body, b, e)
    elseif (key == "prompt" or key == "input") and not text then text = body:sub(b, math.min(e - 1, b + 255))
    end
    return false
  end)
  if user and user ~= "" then return "u:" .. user end
  if messages and messages ~= "" then return "m:" .. system .. messages end
  if text then return "p:" .. text end
  return ""
end

-- Inside HAProxy: a sample fetch, lua.oscar_session_key.
if core then
  core.register_fetches("oscar_session_key", function(txn)
    local ok, key = pcall(M.session_key, txn.f:req_hdr("x-session-id"), txn.f:req_body())
    if ok and key then return key end
    return ""
  end)
end

return M
