-- The request mix of bench/capacity.ts, paced on one schedule: each answered connection
-- takes the next slot (1/rate s apart) and waits for it, or sends at once when the slots
-- have fallen behind (then all connections are busy and the achieved rate shows it).
-- Every 20 requests: 14 page views (a public key, its site's Origin, a random visitor
-- address in X-Forwarded-For), 2 backend batches of 50 events (a private key),
-- 3 whoami (a public key) and 1 read of the first 50 events (a private key).
-- The keys come from the environment, never from a file or the command line.
-- done() is bench/wrk-report.lua's.
dofile(os.getenv("WRK_REPORT"))

local function split(text)
  local items = {}
  for item in string.gmatch(text or "", "[^,]+") do items[#items + 1] = item end
  return items
end

local publicKeys = split(os.getenv("CAP_PUBLIC_KEYS"))
local privateKeys = split(os.getenv("CAP_PRIVATE_KEYS"))
local origins = split(os.getenv("CAP_ORIGINS"))
local interval = 1000 / tonumber(os.getenv("CAP_RATE"))

-- wrk's Lua is LuaJIT: a millisecond clock through its FFI.
local ffi = require("ffi")
ffi.cdef([[
typedef struct { long tv_sec; long tv_nsec; } capacity_timespec;
int clock_gettime(int clock, capacity_timespec *now);
]])
local timespec = ffi.new("capacity_timespec")
local function nowMs()
  ffi.C.clock_gettime(1, timespec) -- CLOCK_MONOTONIC
  return tonumber(timespec.tv_sec) * 1000 + tonumber(timespec.tv_nsec) / 1e6
end
local nextSlot = nil

local batchEvents = {}
for i = 1, 50 do
  batchEvents[i] = string.format('{"eventType":"order_line","properties":{"sku":"sku-%d","quantity":%d,"price":%d}}', i, i % 5 + 1, 100 + i)
end
local batchBody = '{"events":[' .. table.concat(batchEvents, ",") .. ']}'

math.randomseed(os.time())
local n = 0

local function visitor()
  return string.format("%d.%d.%d.%d", math.random(1, 223), math.random(0, 255), math.random(0, 255), math.random(1, 254))
end

function delay()
  local now = nowMs()
  nextSlot = math.max(nextSlot or now, now - 1000) + interval
  return math.max(0, nextSlot - now)
end

function request()
  n = n + 1
  local slot = n % 20
  local site = math.random(#publicKeys)
  if slot < 14 then
    return wrk.format("POST", "/api/v0/analytics", {
      ["authorization"] = "Bearer " .. publicKeys[site],
      ["origin"] = origins[site],
      ["content-type"] = "application/json",
      ["x-forwarded-for"] = visitor(),
    }, string.format('{"eventType":"page_view","url":"%s/page/%d"}', origins[site], math.random(1, 500)))
  elseif slot < 16 then
    return wrk.format("POST", "/api/v0/analytics", {
      ["authorization"] = "Bearer " .. privateKeys[site],
      ["content-type"] = "application/json",
    }, batchBody)
  elseif slot < 19 then
    return wrk.format("GET", "/api/v0/whoami", {
      ["authorization"] = "Bearer " .. publicKeys[site],
      ["origin"] = origins[site],
      ["x-forwarded-for"] = visitor(),
    })
  else
    return wrk.format("GET", "/api/v0/analytics?limit=50", {
      ["authorization"] = "Bearer " .. privateKeys[site],
    })
  end
end
