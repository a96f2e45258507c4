-- Headless Neovim (Debian's 0.7+) driving `leanpool lsp` through its
-- built-in LSP client, run by the `neovim_headless_session` test in
-- lsp_lean/nvim.rs. It only acts and records; the Rust test checks the record.
--
--   nvim --headless -u NONE -i NONE -n FILE.lean -c 'luafile lsp_nvim.lua'
--
-- Environment: LEANPOOL_BIN, LP_CONFIG (daemon-style TOML), LP_LOG (the
-- server's stderr), LP_PIDFILE, LP_RESULT (JSON written here). Exits 0
-- after writing the record, 1 (`cquit`) when a step timed out (the record
-- then has `error`).
--
-- The same three lines make an editor config (docs/editors.md): start a
-- client whose cmd is `leanpool lsp`, attach it to Lean buffers.

local function env(k)
  return assert(os.getenv(k), k .. ' is not set')
end
local result = env('LP_RESULT')
local log = env('LP_LOG')
local out = { published = {} }

local function save()
  local f = assert(io.open(result, 'w'))
  f:write(vim.fn.json_encode(out))
  f:close()
end

local function fail(msg)
  out.error = msg
  save()
  vim.cmd('cquit 1')
end

local function log_has(s)
  local f = io.open(log, 'r')
  if not f then
    return false
  end
  local t = f:read('*a')
  f:close()
  return t:find(s, 1, true) ~= nil
end

-- Every publishDiagnostics as the server sent it (exact LSP ranges), then
-- Neovim's own handling (what the editor shows).
local show = vim.lsp.handlers['textDocument/publishDiagnostics']
vim.lsp.handlers['textDocument/publishDiagnostics'] = function(err, params, ctx, config)
  table.insert(out.published, params)
  return show(err, params, ctx, config)
end

local client = vim.lsp.start_client({
  name = 'leanpool',
  -- The pid file lets the test check that no Lean process outlives the
  -- editor; stderr (logs) goes to a file, stdout is the LSP channel.
  cmd = { 'sh', '-c', 'echo $$ > "$LP_PIDFILE"; exec "$LEANPOOL_BIN" lsp --config "$LP_CONFIG" --prewarm "" 2>>"$LP_LOG"' },
  root_dir = vim.fn.getcwd(),
})
if not client then
  fail('vim.lsp.start_client failed')
end

-- The header (no imports) must be warm before the file is opened: the
-- point of leanpool lsp. A loaded machine may take minutes.
if not vim.wait(900000, function() return log_has('worker ready') end, 200) then
  fail('the spare never became ready')
end

local buf = vim.api.nvim_get_current_buf()
local uri = vim.uri_from_bufnr(buf)
local t0 = vim.loop.hrtime()
vim.lsp.buf_attach_client(buf, client)

local function shown()
  local ds = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(ds, { lnum = d.lnum, col = d.col, end_lnum = d.end_lnum, end_col = d.end_col, severity = d.severity, message = d.message })
  end
  table.sort(ds, function(a, b) return a.lnum < b.lnum end)
  return ds
end

if not vim.wait(300000, function() return #shown() >= 2 end, 20) then
  fail('no diagnostics for the opened file')
end
out.open_ms = (vim.loop.hrtime() - t0) / 1e6
out.opened = shown()

local function request(method, params)
  local r = vim.lsp.buf_request_sync(buf, method, params, 60000)
  if not r or not r[client] then
    fail('no answer to ' .. method)
  end
  return { result = r[client].result, err = r[client].err }
end
local function at(line, character)
  return { textDocument = { uri = uri }, position = { line = line, character = character } }
end

out.hover = request('textDocument/hover', at(1, 22))
out.goal = request('$/lean/plainGoal', at(2, 2))

-- Fix the error as a user would: `3` -> `2` (Neovim sends an incremental
-- didChange). The error must clear, the `sorry` warning stay.
vim.api.nvim_buf_set_text(buf, 0, 22, 0, 23, { '2' })
local function fixed()
  local ds = shown()
  return #ds == 1 and ds[1].message:find('sorry', 1, true) ~= nil
end
if not vim.wait(120000, fixed, 20) then
  out.after_edit = shown()
  fail('the error did not clear after the edit')
end
out.after_edit = shown()

-- A clean stop: shutdown + exit; the Rust side checks that the server and
-- its workers are gone.
vim.lsp.stop_client(client)
vim.wait(30000, function() return vim.lsp.client_is_stopped(client) end, 100)
out.stopped = vim.lsp.client_is_stopped(client)
save()
vim.cmd('qall!')
