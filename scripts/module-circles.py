#!/usr/bin/env python3
# module-circles.py: import circles between the modules of a crate (issue 23), from `crate::`
# and `super::` paths outside comments and test modules. Usage: scripts/module-circles.py crates/report [...]
# Prints each strongly connected set of modules and who imports whom in it; nothing when there is none.
import re,os,sys,itertools
for crate in sys.argv[1:]:
    src=os.path.join(crate,'src'); mods={}
    for dp,dn,fn in os.walk(src):
        for f in fn:
            if f.endswith('.rs'):
                p=os.path.join(dp,f); rel=os.path.relpath(p,src)[:-3]
                parts=rel.split('/')
                if parts[-1]=='mod': parts=parts[:-1]
                if parts==['lib'] or parts==['main']: continue
                import re as _r
                mods['::'.join(parts)]='\n'.join(_r.sub(r'//.*','',l) for l in open(p).read().split('\n'))
    # cut test modules
    g={}
    for m,s in mods.items():
        s=re.split(r'#\[cfg\(test\)\]\s*mod\s+\w+\s*\{',s)[0]
        deps=set()
        for mm in re.finditer(r'crate::((?:\w+::)*\w+)',s):
            path=mm.group(1).split('::')
            # longest module prefix
            for k in range(len(path),0,-1):
                cand='::'.join(path[:k])
                if cand in mods: deps.add(cand);break
        for mm in re.finditer(r'use crate::\{([^}]*)\}',s):
            for item in mm.group(1).split(','):
                cand=item.strip().split('::')[0]
                if cand in mods: deps.add(cand)
        for mm in re.finditer(r'(?:use |\b)super::(\w+)',s):
            par=m.split('::')[:-1]; cand='::'.join(par+[mm.group(1)])
            if cand in mods: deps.add(cand)
        deps.discard(m); g[m]=deps
    # SCCs (tarjan)
    idx={};low={};st=[];on=set();out=[];c=[0]
    def sc(v):
        idx[v]=low[v]=c[0];c[0]+=1;st.append(v);on.add(v)
        for w in g[v]:
            if w not in idx: sc(w);low[v]=min(low[v],low[w])
            elif w in on: low[v]=min(low[v],idx[w])
        if low[v]==idx[v]:
            comp=[]
            while True:
                w=st.pop();on.discard(w);comp.append(w)
                if w==v:break
            if len(comp)>1: out.append(comp)
    for v in g:
        if v not in idx: sc(v)
    for comp in out:
        print(crate,'cycle:',sorted(comp))
        for a in sorted(comp):
            print('   ',a,'->',sorted(d for d in g[a] if d in comp))
