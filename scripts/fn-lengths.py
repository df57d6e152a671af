#!/usr/bin/env python3
# fn-lengths.py: functions longer than N lines outside tests (issue 23, item 10), longest first.
# Usage: scripts/fn-lengths.py 150 crates [more dirs]. Strings and comments are skipped when
# matching braces; `#[cfg(test)] mod` blocks, tests/ and benches/ are left out.
import re,sys,os
N=int(sys.argv[1]); roots=sys.argv[2:]
fnre=re.compile(r'^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+"C"\s+)?fn\s+(\w+)')
def strip(src):
    # replace string/char/comment contents with spaces, keep newlines
    out=[];i=0;n=len(src)
    while i<n:
        c=src[i]
        if src.startswith('//',i):
            j=src.find('\n',i); j=n if j<0 else j; out.append(' '*(j-i)); i=j; continue
        if src.startswith('/*',i):
            j=src.find('*/',i+2); j=n if j<0 else j+2; out.append(''.join('\n' if ch=='\n' else ' ' for ch in src[i:j])); i=j; continue
        m=re.match(r'r(#*)"',src[i:i+10]) if c=='r' and (i==0 or not (src[i-1].isalnum() or src[i-1]=='_')) else None
        if m:
            h=m.group(1); end='"'+h; j=src.find(end,i+len(m.group(0))); j=n if j<0 else j+len(end)
            out.append(''.join('\n' if ch=='\n' else ' ' for ch in src[i:j])); i=j; continue
        if c=='"':
            j=i+1
            while j<n and src[j]!='"':
                j+= 2 if src[j]=='\\' else 1
            j+=1; out.append(''.join('\n' if ch=='\n' else ' ' for ch in src[i:j])); i=j; continue
        if c=="'":
            m=re.match(r"'(\\.|\\u\{[0-9a-fA-F]+\}|\\x..|[^\\'])'",src[i:i+12])
            if m: out.append(' '*len(m.group(0))); i+=len(m.group(0)); continue
        out.append(c); i+=1
    return ''.join(out)
res=[]
for root in roots:
  for dp,dn,fn in os.walk(root):
    if '/tests' in dp or dp.endswith('tests') or '/target' in dp or '/benches' in dp: continue
    for f in fn:
      if not f.endswith('.rs') or f=='tests.rs': continue
      p=os.path.join(dp,f); s=strip(open(p).read()); lines=s.split('\n')
      # find test modules ranges
      skip=[]
      for k,l in enumerate(lines):
        if re.match(r'\s*#\[cfg\(test\)\]',l):
          # next mod line
          for k2 in range(k+1,min(k+3,len(lines))):
            if re.match(r'\s*(pub\s+)?mod\s+\w+\s*\{',lines[k2]):
              depth=0
              for k3 in range(k2,len(lines)):
                depth+=lines[k3].count('{')-lines[k3].count('}')
                if depth==0 and k3>k2 or (depth==0 and '}' in lines[k3]): skip.append((k2,k3));break
              break
      for k,l in enumerate(lines):
        m=fnre.match(l)
        if not m or any(a<=k<=b for a,b in skip): continue
        depth=0;started=False
        for k3 in range(k,len(lines)):
          for ch in lines[k3]:
            if ch=='{': depth+=1;started=True
            elif ch=='}': depth-=1
            elif ch==';' and not started and depth==0: break
          else:
            if started and depth==0:
              ln=k3-k+1
              if ln>N: res.append((ln,p,k+1,m.group(7)))
              break
            continue
          break
for r in sorted(res,reverse=True): print(*r)
