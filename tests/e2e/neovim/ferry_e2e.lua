-- Neovim 0.7's built-in LSP client against `ferry serve`, headless: a client nobody on ferry
-- wrote. Driven by tests/e2e/test_neovim.cpp, which reads the results file this writes.
-- Environment: FERRY_BIN, FERRY_E2E_PROJECT, FERRY_E2E_BOX (the mapping on the box, a local path
-- since the box is the sshd fixture), FERRY_E2E_RESULTS, FERRY_E2E_BROKEN_LINE, FERRY_E2E_PYLSP (a
-- Python language server command: Debian's pylsp).
local bin = os.getenv('FERRY_BIN')
local root = os.getenv('FERRY_E2E_PROJECT')
local box = os.getenv('FERRY_E2E_BOX')
local results_file = os.getenv('FERRY_E2E_RESULTS')
local out = { steps = {}, messages = {}, documents = {} }

local function finish()
  local f = io.open(results_file, 'w')
  f:write(vim.fn.json_encode(out))
  f:close()
  vim.cmd('qall!')
end

local function step(name, ok, detail)
  table.insert(out.steps, { name = name, ok = ok, detail = tostring(detail or '') })
  if not ok then finish() end
  return ok
end

local function read(path)
  local f = io.open(path, 'r')
  if not f then return nil end
  local text = f:read('*a')
  f:close()
  return text
end

local function uri_path(uri) return vim.uri_to_fname(uri) end

local id = vim.lsp.start_client({
  name = 'ferry',
  cmd = { bin, 'serve' },
  root_dir = root,
  handlers = {
    -- 0.7 has no handler for it (and says showDocument.support=false): a user's config would add one.
    ['window/showDocument'] = function(_, params)
      table.insert(out.documents, uri_path(params.uri))
      return { success = true }
    end,
    -- The default handler calls inputlist(), which waits forever headless.
    ['window/showMessageRequest'] = function(_, params)
      table.insert(out.messages, params.message)
      return vim.NIL
    end,
    ['window/showMessage'] = function(_, params)
      table.insert(out.messages, params.message)
    end,
  },
})
if not step('client started', id ~= nil) then return end

vim.cmd('edit ' .. root .. '/main.py')
vim.lsp.buf_attach_client(0, id)
local client = vim.lsp.get_client_by_id(id)
if not step('initialized', vim.wait(20000, function() return client.initialized end, 20)) then return end
local commands = client.server_capabilities.executeCommandProvider.commands
if not step('ferry.run is a command', vim.tbl_contains(commands, 'ferry.run'), table.concat(commands, ',')) then return end

-- 1. Edit and :w: the file is on the box.
vim.api.nvim_buf_set_lines(0, 0, -1, false, {
  'import sys',
  'print("edited in neovim, run on the box")',
  'if __name__ == "__main__":',
  '    sys.exit(0)',
})
vim.cmd('write')
local wanted = 'import sys\nprint("edited in neovim, run on the box")\nif __name__ == "__main__":\n    sys.exit(0)\n'
if not step('saved file reached the box', vim.wait(30000, function() return read(box .. '/main.py') == wanted end, 20),
            read(box .. '/main.py') or '(missing)') then return end

-- 2. The code lens above the main guard runs the script; its output goes to a log file the
--    editor is asked to show, and the exit arrives as a message.
vim.lsp.codelens.refresh()
if not step('code lenses arrived', vim.wait(20000, function() return #vim.lsp.codelens.get(0) >= 2 end, 20)) then return end
local titles = {}
for _, lens in ipairs(vim.lsp.codelens.get(0)) do
  table.insert(titles, lens.command.title .. '@' .. lens.range.start.line)
end
out.lenses = titles
vim.ui.select = function(items, _, on_choice)
  for i, item in ipairs(items) do
    if item.lens.command.command == 'ferry.run' then return on_choice(item, i) end
  end
  on_choice(nil, nil)
end
vim.api.nvim_win_set_cursor(0, { 3, 0 })
vim.lsp.codelens.run()
local function exit_message()
  for _, m in ipairs(out.messages) do
    if m:find('main.py on', 1, true) and m:find('exited with status', 1, true) then return m end
  end
end
if not step('exit message arrived', vim.wait(60000, function() return exit_message() ~= nil end, 20),
            table.concat(out.messages, ' | ')) then return end
out.exit_message = exit_message()
if not step('log shown', #out.documents >= 1) then return end
out.log_text = read(out.documents[1]) or ''

-- 3. A broken ferry.json gets a diagnostic at the right line; fixing it clears it.
vim.cmd('edit ' .. root .. '/ferry.json')
vim.lsp.buf_attach_client(0, id)  -- 0.7 attaches nothing by itself (no lspconfig here)
local good = vim.api.nvim_buf_get_lines(0, 0, -1, false)
local broken = vim.deepcopy(good)
local line = tonumber(os.getenv('FERRY_E2E_BROKEN_LINE'))
broken[line + 1] = broken[line + 1]:gsub('"interpreter"', '"interpretr"')
vim.api.nvim_buf_set_lines(0, 0, -1, false, broken)
vim.cmd('write')
local bufnr = vim.api.nvim_get_current_buf()
if not step('diagnostic published', vim.wait(20000, function() return #vim.diagnostic.get(bufnr) > 0 end, 20), 'none within 20 s') then return end
out.diagnostics = {}
for _, d in ipairs(vim.diagnostic.get(bufnr)) do
  table.insert(out.diagnostics, { line = d.lnum, col = d.col, message = d.message })
end
vim.api.nvim_buf_set_lines(0, 0, -1, false, good)
vim.cmd('write')
if not step('fixed file clears it', vim.wait(20000, function() return #vim.diagnostic.get(bufnr) == 0 end, 20)) then return end

-- 4. The box's packages for a Python language server: ferry mirrors them (env/sync), then pylsp
--    (jedi), started beside ferry with .ferry/venv as its environment, answers from the mirror
--    although this machine's python has no torch.
local synced = client.request_sync('env/sync', vim.empty_dict(), 300000, bufnr)
if not step('env/sync answered', synced ~= nil and synced.result ~= nil, vim.inspect(synced)) then return end
out.env_sync = synced.result
local script = root .. '/uses_torch.py'
local f = io.open(script, 'w')
f:write('import torch.nn\n\nlayer = torch.nn.Linear(2, 3)\n')
f:close()
local py = vim.lsp.start_client({
  name = 'pylsp',
  cmd = { os.getenv('FERRY_E2E_PYLSP') },
  root_dir = root,
  settings = { pylsp = { plugins = { jedi = { environment = root .. '/.ferry/venv' } } } },
  -- 0.7 sends no settings by itself (lspconfig does this for a user).
  on_init = function(c) c.notify('workspace/didChangeConfiguration', { settings = c.config.settings }) end,
})
if not step('pylsp started', py ~= nil) then return end
vim.cmd('edit ' .. script)
vim.lsp.buf_attach_client(0, py)
local pyc = vim.lsp.get_client_by_id(py)
if not step('pylsp initialized', vim.wait(30000, function() return pyc.initialized end, 20)) then return end
local function at(line, character)
  return { textDocument = { uri = vim.uri_from_bufnr(0) }, position = { line = line, character = character } }
end
local function first_path(reply)
  local r = reply and reply.result
  if type(r) ~= 'table' then return '' end
  if r[1] then r = r[1] end
  return r.uri and uri_path(r.uri) or (r.targetUri and uri_path(r.targetUri)) or ''
end
-- "layer = torch.nn.Linear(2, 3)": nn at 14, Linear at 17.
local nn_def = pyc.request_sync('textDocument/definition', at(2, 15), 60000, 0)
out.definition_nn = first_path(nn_def)
local linear_def = pyc.request_sync('textDocument/definition', at(2, 19), 60000, 0)
out.definition_linear = first_path(linear_def)
local hover = pyc.request_sync('textDocument/hover', at(2, 19), 60000, 0)
local contents = hover and hover.result and hover.result.contents or ''
if type(contents) == 'table' then contents = contents.value or vim.inspect(contents) end
out.hover_linear = contents
step('pylsp answered', out.definition_linear ~= '', vim.inspect(linear_def))
pyc.stop()
step('done', true)
finish()
