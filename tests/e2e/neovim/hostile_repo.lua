-- A cloned repository opened in Neovim 0.7's built-in LSP client, as docs/ide.md's setup starts
-- `ferry serve` for it: the person answers "Not now" to ferry's trust question. Saves, a lens
-- command and a connect must then do nothing. Driven by tests/e2e/test_neovim.cpp, which checks
-- marker files, the connect recorder and the results this writes.
-- Environment: FERRY_BIN, FERRY_E2E_PROJECT, FERRY_E2E_RESULTS.
local bin = os.getenv('FERRY_BIN')
local root = os.getenv('FERRY_E2E_PROJECT')
local results_file = os.getenv('FERRY_E2E_RESULTS')
local out = { questions = {}, errors = {}, children = {} }

local function finish()
  local f = io.open(results_file, 'w')
  f:write(vim.fn.json_encode(out))
  f:close()
  vim.cmd('qall!')
end

local id = vim.lsp.start_client({
  name = 'ferry',
  cmd = { bin, 'serve' },
  root_dir = root,
  handlers = {
    ['window/showMessageRequest'] = function(_, params)
      table.insert(out.questions, params.message)
      return { title = 'Not now' }
    end,
  },
})
vim.cmd('edit ' .. root .. '/main.py')
vim.lsp.buf_attach_client(0, id)
local client = vim.lsp.get_client_by_id(id)
out.initialized = vim.wait(20000, function() return client.initialized end, 20)
if not out.initialized then return finish() end

-- What ferry serve has started so far (an agent, a probe, ssh): its children.
local function children()
  local pid = client.rpc and client.rpc.pid
  if not pid then return -1 end
  return #vim.fn.systemlist({ 'ps', '-o', 'pid=', '--ppid', tostring(pid) })
end

local function command(name)
  local r = client.request_sync('workspace/executeCommand',
    { command = name, arguments = { vim.uri_from_fname(root .. '/main.py') } }, 20000, 0)
  table.insert(out.errors, r and r.err and r.err.code or vim.NIL)
end

vim.api.nvim_buf_set_lines(0, 0, -1, false, { "print('edited in neovim')" })
vim.cmd('write')
out.asked = vim.wait(20000, function() return #out.questions > 0 end, 20)
command('ferry.sync')
vim.cmd('write')
command('ferry.run')
local connect = client.request_sync('host/connect', {}, 20000, 0)
table.insert(out.errors, connect and connect.err and connect.err.code or vim.NIL)
table.insert(out.children, children())
finish()
