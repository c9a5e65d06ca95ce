# Usage: PRINT_GOLDEN=1 sh scripts/isolated.sh swift test --skip-build --no-parallel --filter ChatUITests > out;
#        python3 scripts/regolden.py < out   (then read every changed row in git diff before committing)
# Rewrites golden screens in Tests/ChatUITests from PRINT_GOLDEN output (stdin): literal rows
# that changed are replaced (escaped); rows written as expressions and comments are kept.
import re, sys, collections
out = sys.stdin.read().split('\n')
blocks = collections.OrderedDict()
i = 0
while i < len(out):
    m = re.match(r'^(GOLDEN|STYLES) (\S+):(\d+)$', out[i])
    if m:
        kind, f, line = m.group(1), m.group(2), int(m.group(3))
        rows = []
        i += 1
        # Test failures on stderr may come between the header and its rows.
        while i < len(out) and not out[i].startswith('            "') and not re.match(r'^(GOLDEN|STYLES) ', out[i]): i += 1
        while i < len(out) and out[i].startswith('            "'):
            rows.append(out[i].strip()[1:-2]); i += 1
        blocks.setdefault((f, line), {})[kind] = rows
        continue
    i += 1
LIT = re.compile(r'^"((?:[^"\\]|\\.)*)",?$')
def unescape(s): return s.encode().decode('unicode_escape').encode('latin-1').decode('utf-8') if '\\' in s else s
def esc(s): return s.replace('\\', '\\\\').replace('"', '\\"')
def apply(lines, start, new):
    j = start; k = 0
    while not lines[j].lstrip().startswith(']'):
        t = lines[j].strip()
        if t.startswith('//') or not t:
            j += 1; continue
        m = LIT.match(t)
        if m and k < len(new):
            old = m.group(1)
            if unescape(old) != new[k]:
                ind = re.match(r'^(\s*)', lines[j]).group(1)
                lines[j] = ind + '"' + esc(new[k]) + '",'
        k += 1; j += 1
    return j
byfile = collections.defaultdict(list)
for (f, line), b in blocks.items(): byfile[f].append((line, b))
for f, items in byfile.items():
    path = 'Tests/ChatUITests/' + f
    lines = open(path).read().split('\n')
    for line, b in items:
        idx = line - 1
        if not lines[idx].rstrip().endswith('['):
            print('SKIP (by hand)', f, line, lines[idx].strip()); continue
        j = apply(lines, idx + 1, b['GOLDEN'])
        if 'STYLES' in b:
            assert 'styles: [' in lines[j], (f, line, lines[j])
            apply(lines, j + 1, b['STYLES'])
    open(path, 'w').write('\n'.join(lines))
    print('updated', path, len(items))
