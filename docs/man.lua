-- pandoc filter for the man pages (make man): a table becomes a definition
-- list, which troff fills at any terminal width; as a table its narrow columns
-- cannot be adjusted. The first column is the term; every other column is a
-- "header: value" line, but a last column named "meaning", which follows them.
-- a break that keeps the indentation of the definition (a LineBreak resets it)
local brk = pandoc.RawInline("man", "\n.br\n")

function Table(tbl)
  local s = pandoc.utils.to_simple_table(tbl)
  local heads = {}
  for i, h in ipairs(s.headers) do
    heads[i] = pandoc.utils.stringify(h)
  end
  local has_meaning = heads[#heads] == "meaning"
  local items = {}
  for _, row in ipairs(s.rows) do
    local body = pandoc.List()
    local last = has_meaning and #row - 1 or #row
    for i = 2, last do
      if #body > 0 then
        body:insert(brk)
      end
      body:insert(pandoc.Emph({ pandoc.Str(heads[i] .. ":") }))
      body:insert(pandoc.Space())
      body:extend(pandoc.utils.blocks_to_inlines(row[i]))
    end
    if has_meaning then
      if #body > 0 then
        body:insert(brk)
      end
      body:extend(pandoc.utils.blocks_to_inlines(row[#row]))
    end
    table.insert(items, { pandoc.utils.blocks_to_inlines(row[1]), { { pandoc.Plain(body) } } })
  end
  return pandoc.DefinitionList(items)
end
