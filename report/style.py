"""The report page's style sheet (inline: the page needs no other file)."""

CSS = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 0; color: #1d1d1f;
       background: #fafafa; }
header { background: #24313f; color: #fff; padding: 12px 24px; position: sticky; top: 0; z-index: 1; }
header h1 { margin: 0 0 6px 0; font-size: 20px; }
nav a { color: #cfe3ff; margin-right: 10px; font-size: 13px; text-decoration: none; }
main { padding: 8px 24px 40px 24px; max-width: 1200px; }
section { background: #fff; border: 1px solid #e3e3e3; border-radius: 6px; padding: 8px 16px 12px 16px;
          margin: 14px 0; }
h2 { font-size: 16px; margin: 6px 0; }
p, li { font-size: 14px; }
table { border-collapse: collapse; font-size: 12.5px; margin: 8px 0; }
th, td { border-bottom: 1px solid #eee; padding: 2px 10px 2px 4px; text-align: left; vertical-align: top; }
thead th { background: #f0f3f7; position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.facts th { width: 220px; color: #555; font-weight: normal; }
.scroll { max-height: 480px; overflow: auto; }
td:last-child { font-family: ui-monospace, 'DejaVu Sans Mono', monospace; }
figure { margin: 8px 0; }
.plot { overflow-x: auto; }
.plot svg { max-width: 100%; height: auto; }
svg.graph { max-width: 100%; height: auto; }
figcaption { font-size: 12.5px; color: #555; }
.verdict.pass { color: #1a7f37; font-weight: bold; }
.verdict.fail { color: #c62828; font-weight: bold; }
.verdict.not { color: #8a6d00; font-weight: bold; }
code { background: #f0f0f0; padding: 0 3px; }
"""
