-- One operation of retry-http's shared state on one target's record, decided on the
-- server in one step (see src/redis/ops.rs, which sends it, and crates/retry-http-policy/src/op.rs,
-- whose `Op::run` is the rule this script follows line for line: the property test in
-- src/redis/tests.rs feeds both the same events and compares them).
--
-- KEYS[1]  the target's key; its value is the record as JSON:
--          {"format":"retry-http-state","rev":N,"target":{...}} (docs/fleet.md, "--state redis://")
-- ARGV[1]  the operation: admit, ask, send or record
-- ARGV[2]  "now" in ms since the epoch, or "" for the server's TIME
-- ARGV[3]  the longest value read as a record, in bytes
-- ARGV[4..9] the limits: threshold, cooldown ms, budget percent, window ms, floor, ttl ms
-- ARGV[10..12] the operation's arguments:
--          admit:  lease ms, run id, 1 when the job starts afresh (its kept key replaced)
--          ask:    hint ms ("" for none), charge (1 or 0), run id
--          send:   -, charge, run id
--          record: hint ms ("" for none), result (success, answered, failure, neutral),
--                  probe id ("" for none)
-- ARGV[13..14] the job (crates/retry-http-policy/src/job.rs):
--          admit:  the job's digest ("" for none), the key proposed for a new job
--          record: the digest of the job whose key is retired ("" for none), the key
--                  the run sent (only that one is retired)
--
-- Answers {now, warning, detail, a, b, c, d, e, f, g}:
--   warning 0: none; 1: the value was longer than ARGV[3] (detail: a NUL, "oversized ",
--   its length); 2: not a record of ours; 3: times in the future were discarded (detail,
--   for 2 and 3: the text as read, for the client to say what was wrong). The record was
--   started afresh (1, 2) or repaired (3).
--   admit:  a = 0 run, 1 probe, 2 refused (open), 3 refused (probe in flight);
--           b = refused until (ms); c = failures; d = the shared hold left (ms, 0: none);
--           e = 1 when the budget has no retry left now, f = retries taken in the
--           window, g = successes in the window
--   ask, send: a = the shared hold left (ms, 0: none); b = 1 when the budget refused;
--           c = retries taken in the window; d = successes in the window (before a retry
--           is taken); e, f, g: the budget's answer to one more retry after the
--           operation, as b, c, d
--   record: nothing more.
--   Then, for every operation, {h, i, j, k, l}: for an admit that brought a job, h = the
--   job's key, i = when it was made, j = 1 when it was already kept (0: the one proposed),
--   k = 1 when the oldest key was dropped to make room and l = when that one was made;
--   otherwise '', 0, 0, 0, 0.

local FORMAT = 'retry-http-state'
local MAX_STAMP = 253402300799000
local BUCKETS = 10
local MAX_BUCKETS = 20
local MAX_LEASE = 3600000
local MAX_COUNT = 9007199254740992
local MAX_FAILURES = 4294967295
local MAX_JOBS = 64
local MAX_KEY_BYTES = 128
local MAX_RUNS = 64

local key = KEYS[1]
local op = ARGV[1]
local now
if ARGV[2] ~= '' then
  now = tonumber(ARGV[2])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local L = {
  threshold = tonumber(ARGV[4]),
  cooldown = tonumber(ARGV[5]),
  pct = tonumber(ARGV[6]),
  window = tonumber(ARGV[7]),
  floor = tonumber(ARGV[8]),
  ttl = tonumber(ARGV[9]),
}

local function whole(v, max)
  return type(v) == 'number' and v >= 0 and v <= max and v == math.floor(v)
end

-- A list (a JSON array): every key 1..n, nothing else.
local function list(v)
  if type(v) ~= 'table' then return false end
  local n = 0
  for _ in pairs(v) do n = n + 1 end
  return n == #v
end

-- An optional timestamp: ok, value (nil for absent or null).
local function optional(v)
  if v == nil or v == cjson.null then return true, nil end
  if whole(v, MAX_STAMP) then return true, v end
  return false, nil
end

local function fresh()
  return { failures = 0, budget = {}, runs = {}, seen = 0, jobs = {} }
end

-- The largest integers JSON readers keep exact (2^53) and serde's u64, as digits.
local EXACT_DIGITS = '9007199254740992'
local U64_DIGITS = '18446744073709551615'
-- How deep serde_json nests arrays and objects before it gives up.
local MAX_DEPTH = 127

-- Whether the digits `d` (no sign, no leading zero) stand for more than `limit`'s.
local function above(d, limit)
  return #d > #limit or (#d == #limit and d > limit)
end

-- A number token as serde_json reads it: the token kept when it is an integer a u64
-- holds exactly as a double; '0.5' (a number no field accepts, and which no text can
-- give, since fractions become strings here) when it is above 2^53 and a u64 still
-- holds it; '"n"' (read as a u64 by nothing) for fractions, exponents, negative numbers
-- and larger integers; nil when it is not JSON (hex, Infinity, NaN, 01, +1, 1.), which
-- serde refuses and cjson reads.
local function number_token(tok)
  local int, rest = tok:match('^(%-?%d+)(.*)$')
  if not int or int:find('^%-?0%d') then return nil end
  if rest ~= '' and not (rest:find('^%.%d+$') or rest:find('^%.%d+[eE][%+%-]?%d+$')
      or rest:find('^[eE][%+%-]?%d+$')) then
    return nil
  end
  if rest ~= '' or int:sub(1, 1) == '-' or above(int, U64_DIGITS) then return '"n"' end
  if above(int, EXACT_DIGITS) then return '0.5' end
  return tok
end

-- Whether `s` is UTF-8 (RFC 3629: no overlong form, no surrogate, nothing past U+10FFFF),
-- as a Rust string must be and cjson does not ask.
local function utf8(s)
  local i = s:find('[\128-\255]')
  while i do
    local c, b = s:byte(i), s:byte(i + 1) or 0
    local len = (c >= 0xC2 and c <= 0xDF and 2) or (c >= 0xE0 and c <= 0xEF and 3)
      or (c >= 0xF0 and c <= 0xF4 and 4)
    if not len or (c == 0xE0 and b < 0xA0) or (c == 0xED and b > 0x9F)
        or (c == 0xF0 and b < 0x90) or (c == 0xF4 and b > 0x8F) then
      return false
    end
    for k = 1, len - 1 do
      local x = s:byte(i + k)
      if not x or x < 0x80 or x > 0xBF then return false end
    end
    i = s:find('[\128-\255]', i + len)
  end
  return true
end

-- The text between two strings, `seg`, as serde_json reads it (see `strict`), and the
-- depth of nesting after it, from `depth`; nil when serde_json would refuse it. Passes
-- in C over the whole of it, and Lua only for each bracket and each number that needs
-- rewriting, so that a long value costs what decoding it does.
local function bare(seg, depth)
  if not seg:find('[^ \t\r\n,:]') then return seg, depth end
  for c in seg:gmatch('[%[%]{}]') do
    if c == '[' or c == '{' then
      depth = depth + 1
      if depth > MAX_DEPTH then return nil end
    else
      depth = depth - 1
    end
  end
  -- An empty object: one cjson cannot tell from an empty list.
  seg = seg:gsub('{[ \t\r\n]*}', '{"":0}')
  if seg:find('[%-%+%.%a]') or seg:find('%f[%d]0%d')
      or seg:find('%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d') then
    local wrong = false
    seg = seg:gsub('[%-%+%.%w]+', function(tok)
      if tok == 'true' or tok == 'false' or tok == 'null' then return tok end
      local fixed = number_token(tok)
      if not fixed then wrong = true end
      return fixed or tok
    end)
    if wrong then return nil end
  end
  return seg, depth
end

-- `text` rewritten so that cjson reads it as serde_json does, or nil when serde_json
-- would refuse it: cjson reads hex, Infinity, 1.0 as 1, bytes that are not UTF-8 and
-- raw control characters in strings, rounds integers past 2^53, nests up to 1000 deep
-- and reads {} as an empty list; serde_json does none of these. Strings are kept as
-- they are.
local function strict(text)
  if not utf8(text) then return nil end
  local out, i, n, depth = {}, 1, #text, 0
  while i <= n do
    local q = text:find('"', i, true) or n + 1
    if q > i then
      out[#out + 1], depth = bare(text:sub(i, q - 1), depth)
      if not depth then return nil end
    end
    if q > n then break end
    local j = q + 1
    while true do
      local k = text:find('["\\]', j)
      if not k then return nil end
      if text:sub(k, k) == '"' then j = k + 1 break end
      j = k + 2
    end
    local literal = text:sub(q, j - 1)
    if literal:find('[%z\1-\31]') then return nil end
    out[#out + 1] = literal
    i = j
  end
  return table.concat(out)
end

-- The record cjson reads in `text`, or nil when it is not one of ours (the rules of
-- record.rs's target_from_json, version 2); see `decode`.
local function read_record(text)
  local ok, v = pcall(cjson.decode, text)
  if not ok or type(v) ~= 'table' or v.format ~= FORMAT then return nil end
  -- Any u64 is a revision to serde; one past 2^53 (0.5, see `number_token`) starts again.
  if v.rev == 0.5 then v.rev = 0 end
  if not whole(v.rev, MAX_COUNT) then return nil end
  local t, r = v.target, {}
  if type(t) ~= 'table' or type(t.breaker) ~= 'table' then return nil end
  local b = t.breaker
  if not whole(b.failures, MAX_FAILURES) then return nil end
  r.failures = b.failures
  local good
  good, r.opened_at = optional(b.opened_at)
  if not good then return nil end
  good, r.probe_until = optional(b.probe_until)
  if not good then return nil end
  if b.probe_id ~= nil and b.probe_id ~= cjson.null then
    if not whole(b.probe_id, MAX_COUNT) then return nil end
    r.probe_id = b.probe_id
  end
  if not list(t.budget) or #t.budget > MAX_BUCKETS then return nil end
  r.budget = {}
  for i, x in ipairs(t.budget) do
    if not list(x) or #x ~= 3 or not whole(x[1], MAX_STAMP)
        or not whole(x[2], MAX_COUNT) or not whole(x[3], MAX_COUNT) then
      return nil
    end
    if i > 1 and r.budget[i - 1][1] >= x[1] then return nil end
    r.budget[i] = { x[1], x[2], x[3] }
  end
  -- Which run made which retries (budget.rs's RunRetries): absent in older records.
  r.runs = {}
  if t.runs ~= nil then
    if not list(t.runs) or #t.runs > MAX_RUNS then return nil end
    for i, x in ipairs(t.runs) do
      if not list(x) or #x ~= 3 or not whole(x[1], MAX_COUNT) or not whole(x[2], MAX_STAMP)
          or not whole(x[3], MAX_COUNT) then
        return nil
      end
      r.runs[i] = { x[1], x[2], x[3] }
    end
  end
  good, r.hold_until = optional(t.hold_until)
  if not good then return nil end
  good, r.seen = optional(t.seen)
  if not good then return nil end
  r.seen = r.seen or now
  r.jobs = {}
  if t.jobs ~= nil then
    if not list(t.jobs) or #t.jobs > MAX_JOBS then return nil end
    for i, x in ipairs(t.jobs) do
      if not list(x) or #x ~= 3 or type(x[1]) ~= 'string' or type(x[2]) ~= 'string'
          or #x[1] ~= 64 or not x[1]:find('^[0-9a-f]+$')
          or #x[2] > MAX_KEY_BYTES or not x[2]:find('^[%w%-%._~]+$')
          or not whole(x[3], MAX_STAMP) then
        return nil
      end
      r.jobs[i] = { x[1], x[2], x[3] }
    end
  end
  return r, v.rev
end

local function num(x)
  if x == nil then return 'null' end
  return string.format('%d', x)
end

-- The JSON form, its keys in the order serde_json writes them.
local function encode(t, rev)
  local buckets = {}
  for i, b in ipairs(t.budget) do
    buckets[i] = '[' .. num(b[1]) .. ',' .. num(b[2]) .. ',' .. num(b[3]) .. ']'
  end
  -- The jobs' keys only when there are some, as record.rs writes them.
  local jobs = ''
  if #t.jobs > 0 then
    local each = {}
    for i, j in ipairs(t.jobs) do
      each[i] = '["' .. j[1] .. '","' .. j[2] .. '",' .. num(j[3]) .. ']'
    end
    jobs = ',"jobs":[' .. table.concat(each, ',') .. ']'
  end
  if #t.runs > 0 then
    local each = {}
    for i, x in ipairs(t.runs) do
      each[i] = '[' .. num(x[1]) .. ',' .. num(x[2]) .. ',' .. num(x[3]) .. ']'
    end
    jobs = jobs .. ',"runs":[' .. table.concat(each, ',') .. ']'
  end
  return '{"format":"' .. FORMAT .. '","rev":' .. num(rev) .. ',"target":{"breaker":{'
    .. '"failures":' .. num(t.failures) .. ',"opened_at":' .. num(t.opened_at)
    .. ',"probe_id":' .. num(t.probe_id) .. ',"probe_until":' .. num(t.probe_until)
    .. '},"budget":[' .. table.concat(buckets, ',') .. '],"hold_until":' .. num(t.hold_until)
    .. jobs .. ',"seen":' .. num(t.seen) .. '}}'
end

-- The record in `text` as serde_json reads it, or nil when it is not one of ours. A text
-- this script wrote (the record read, encoded again, is the text itself) holds nothing
-- `strict` would change and is read at once; any other is made `strict` first, which
-- would double the script's time if every operation paid for it.
local function decode(text)
  local r, rev = read_record(text)
  if r and encode(r, rev) == text then return r, rev end
  text = strict(text)
  if not text then return nil end
  return read_record(text)
end

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  c.budget = {}
  for i, b in ipairs(t.budget) do c.budget[i] = { b[1], b[2], b[3] } end
  c.jobs = {}
  for i, j in ipairs(t.jobs) do c.jobs[i] = { j[1], j[2], j[3] } end
  c.runs = {}
  for i, x in ipairs(t.runs) do c.runs[i] = { x[1], x[2], x[3] } end
  return c
end

local function longest_lease()
  return math.max(L.cooldown, MAX_LEASE)
end

-- Budget::forget_runs_of_gone_buckets: the entries of buckets no longer kept are dropped.
local function forget_runs(t)
  local starts, kept = {}, {}
  for _, b in ipairs(t.budget) do starts[b[1]] = true end
  for _, x in ipairs(t.runs) do
    if starts[x[2]] then kept[#kept + 1] = x end
  end
  t.runs = kept
end

-- Breaker::damage and Budget::drop_future: whether anything was discarded.
local function repair(t)
  local damaged = (t.opened_at and t.opened_at > now + L.cooldown)
    or (t.probe_until and t.probe_until > now + longest_lease())
  if damaged then
    t.failures, t.opened_at, t.probe_until, t.probe_id = 0, nil, nil, nil
  end
  local kept, latest = {}, now + L.window
  for _, b in ipairs(t.budget) do
    if b[1] <= latest then kept[#kept + 1] = b end
  end
  local dropped = #kept ~= #t.budget
  t.budget = kept
  forget_runs(t)
  return damaged or dropped
end

local function prune(t)
  local since = math.max(now - L.window, 0)
  local kept = {}
  for _, b in ipairs(t.budget) do
    if b[1] > since or now < L.window then kept[#kept + 1] = b end
  end
  while #kept > MAX_BUCKETS do table.remove(kept, 1) end
  t.budget = kept
  forget_runs(t)
end

local function held(t)
  if t.hold_until and t.hold_until > now then return t.hold_until - now end
  return nil
end

local function expires_at(t)
  local at = t.seen + L.ttl
  if t.opened_at then at = math.max(at, t.opened_at + L.cooldown) end
  if t.probe_until then at = math.max(at, t.probe_until) end
  if t.hold_until then at = math.max(at, t.hold_until) end
  return at
end

local function closed(t)
  return t.failures == 0 and t.opened_at == nil and t.probe_until == nil and t.probe_id == nil
end

-- job::expire: the jobs' keys made a TTL ago or more are forgotten (one made later than
-- now is taken as made now).
local function expire(t)
  local kept = {}
  for _, j in ipairs(t.jobs) do
    j[3] = math.min(j[3], now)
    if j[3] + L.ttl > now then kept[#kept + 1] = j end
  end
  t.jobs = kept
end

-- Target::tidy: whether the record is still worth keeping.
local function tidy(t)
  t.seen = math.min(t.seen, now)
  prune(t)
  if held(t) == nil then t.hold_until = nil end
  expire(t)
  local empty = #t.budget == 0 and closed(t) and t.hold_until == nil and #t.jobs == 0
  return not empty and now < expires_at(t)
end

local function counts(t)
  local s, r = 0, 0
  for _, b in ipairs(t.budget) do s, r = s + b[2], r + b[3] end
  return s, r
end

-- Budget::own: the retries of the window the run `run` made, per bucket at most the
-- bucket's retries.
local function own(t, run)
  local sum = 0
  for _, b in ipairs(t.budget) do
    local said = 0
    for _, x in ipairs(t.runs) do
      if x[1] == run and x[2] == b[1] then said = math.min(said + x[3], MAX_COUNT) end
    end
    sum = sum + math.min(said, b[3])
  end
  return sum
end

-- Budget::allowance then the check of take_retry for the run `run`: whether a retry is
-- refused, and the counts the refusal names (the retries of other runs: a run's own do
-- not count against it).
local function refused(t, run)
  local s, r = counts(t)
  local allowed = math.max(math.floor(s * L.pct / 100), L.floor)
  local others = math.max(r - own(t, run), 0)
  return others >= allowed, others, s
end

-- Budget::charge: one retry of the run `run` in the bucket starting at `start`; past
-- MAX_RUNS entries the oldest is dropped.
local function charge(t, run, start)
  for _, x in ipairs(t.runs) do
    if x[1] == run and x[2] == start then
      x[3] = math.min(x[3] + 1, MAX_COUNT)
      return
    end
  end
  t.runs[#t.runs + 1] = { run, start, 1 }
  if #t.runs > MAX_RUNS then table.remove(t.runs, 1) end
end

local function bucket(t)
  local w = math.max(math.floor(L.window / BUCKETS), 1)
  local start = now - now % w
  for i, b in ipairs(t.budget) do
    if b[1] == start then return b end
    if b[1] > start then
      local fresh_bucket = { start, 0, 0 }
      table.insert(t.budget, i, fresh_bucket)
      return fresh_bucket
    end
  end
  local last = { start, 0, 0 }
  t.budget[#t.budget + 1] = last
  return last
end

local function hold(t, wait)
  t.seen = now
  local till = math.min(now + wait, MAX_STAMP)
  t.hold_until = math.max(t.hold_until or till, till)
end

local function admit(t, lease, id)
  t.seen = now
  if t.opened_at == nil then return 0, 0 end
  local reopen = t.opened_at + L.cooldown
  if now < reopen then return 2, reopen end
  if t.probe_until and now < t.probe_until then return 3, t.probe_until end
  lease = math.min(math.max(lease, L.cooldown), longest_lease())
  t.probe_until, t.probe_id = now + lease, id
  return 1, 0
end

local function finish(t, result, probe)
  t.seen = now
  if result == 'success' then
    prune(t)
    local b = bucket(t)
    b[2] = math.min(b[2] + 1, MAX_COUNT)
  end
  local holder = probe ~= nil and t.probe_until ~= nil and t.probe_id == probe
  if result == 'success' or result == 'answered' then
    t.failures, t.opened_at, t.probe_until, t.probe_id = 0, nil, nil, nil
  elseif result == 'failure' then
    t.failures = math.min(t.failures + 1, MAX_FAILURES)
    if holder or t.failures >= L.threshold then t.opened_at = now end
  end
  if holder then t.probe_until, t.probe_id = nil, nil end
end

-- The keys of the job `digest` are forgotten: all of them, or only `sent` when given.
local function forget(t, digest, sent)
  local kept = {}
  for _, j in ipairs(t.jobs) do
    if j[1] ~= digest or (sent and j[2] ~= sent) then kept[#kept + 1] = j end
  end
  t.jobs = kept
end

-- job::retire: the key `sent` of the job `digest` is forgotten (another run's key for the
-- same job stays).
local function retire(t, digest, sent) forget(t, digest, sent) end

-- job::take: the job's key, or the one proposed kept as the job's (always, when `renew`,
-- which forgets the key kept); answers h to l.
local function take(t, digest, proposed, renew)
  if renew then forget(t, digest) end
  for _, j in ipairs(t.jobs) do
    if j[1] == digest then return { j[2], j[3], 1, 0, 0 } end
  end
  local dropped, made = 0, 0
  if #t.jobs >= MAX_JOBS then
    dropped, made = 1, table.remove(t.jobs, 1)[3]
  end
  t.jobs[#t.jobs + 1] = { digest, proposed, now }
  return { proposed, now, 0, dropped, made }
end

local function hint_of(arg)
  if arg == '' then return nil end
  return tonumber(arg)
end

-- The operation itself on `t`: its answer's a to g.
local function run(t)
  if op == 'admit' then
    local kind, till = admit(t, tonumber(ARGV[10]), tonumber(ARGV[11]))
    local no, r, s = refused(t, tonumber(ARGV[11]))
    local job = { '', 0, 0, 0, 0 }
    if ARGV[13] ~= '' then job = take(t, ARGV[13], ARGV[14], ARGV[12] == '1') end
    return { kind, till, t.failures, held(t) or 0, no and 1 or 0, r, s }, job
  elseif op == 'ask' then
    local h = hint_of(ARGV[10])
    if h then hold(t, h) end
    local run = tonumber(ARGV[12])
    local no, r, s = refused(t, run)
    if ARGV[11] ~= '1' then no, r, s = false, 0, 0 end
    local later, r2, s2 = refused(t, run)
    return { held(t) or 0, no and 1 or 0, r, s, later and 1 or 0, r2, s2 }
  elseif op == 'send' then
    local h = held(t)
    local run = tonumber(ARGV[12])
    local no, r, s = false, 0, 0
    if not h and ARGV[11] == '1' then
      t.seen = now
      prune(t)
      no, r, s = refused(t, run)
      if not no then
        local b = bucket(t)
        b[3] = math.min(b[3] + 1, MAX_COUNT)
        charge(t, run, b[1])
      end
    end
    local later, r2, s2 = refused(t, run)
    return { h or 0, no and 1 or 0, r, s, later and 1 or 0, r2, s2 }
  elseif op == 'record' then
    local h = hint_of(ARGV[10])
    if h then hold(t, h) end
    local probe = ARGV[12] ~= '' and tonumber(ARGV[12]) or nil
    if ARGV[13] ~= '' then retire(t, ARGV[13], ARGV[14]) end
    finish(t, ARGV[11], probe)
    return { 0, 0, 0, 0, 0, 0, 0 }
  end
  return redis.error_reply('ERR unknown operation ' .. tostring(op))
end

-- Read: the value's length is measured first, so a huge one is never sent back or decoded.
local warning, detail, text = 0, '', ''
local length = redis.call('STRLEN', key)
if length > tonumber(ARGV[3]) then
  warning, detail, text = 1, '\0oversized ' .. length, '-'
else
  text = redis.call('GET', key) or ''
end
local t, rev = fresh(), 0
if warning == 0 and text ~= '' then
  local read, r = decode(text)
  if read == nil then
    warning, detail = 2, text
  else
    t, rev = read, r
    if repair(t) then warning, detail = 3, text end
  end
end
if not tidy(t) then t = fresh() end

local before = copy(t)
local answer, job = run(t)
if answer.err then return answer end
job = job or { '', 0, 0, 0, 0 }

-- Target::worth_writing: a change other than `seen`, or `seen` moved by a tenth of the TTL.
local function worth(a, b)
  for _, f in ipairs({ 'failures', 'opened_at', 'probe_until', 'probe_id', 'hold_until' }) do
    if a[f] ~= b[f] then return true end
  end
  if #a.budget ~= #b.budget or #a.jobs ~= #b.jobs or #a.runs ~= #b.runs then return true end
  for i, x in ipairs(a.runs) do
    local y = b.runs[i]
    if x[1] ~= y[1] or x[2] ~= y[2] or x[3] ~= y[3] then return true end
  end
  for i, x in ipairs(a.budget) do
    local y = b.budget[i]
    if x[1] ~= y[1] or x[2] ~= y[2] or x[3] ~= y[3] then return true end
  end
  for i, x in ipairs(a.jobs) do
    local y = b.jobs[i]
    if x[1] ~= y[1] or x[2] ~= y[2] or x[3] ~= y[3] then return true end
  end
  return math.max(a.seen - b.seen, 0) >= math.floor(L.ttl / 10)
end

local changed = worth(t, before)
if not tidy(t) then
  if text ~= '' then redis.call('DEL', key) end
elseif changed or warning == 3 then
  local ttl = math.max(expires_at(t) - now, 1)
  redis.call('SET', key, encode(t, (rev + 1) % MAX_COUNT), 'PX', ttl)
end
return { now, warning, detail, answer[1], answer[2], answer[3], answer[4], answer[5],
  answer[6], answer[7], job[1], job[2], job[3], job[4], job[5] }
