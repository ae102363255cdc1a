/* headstats attention viewer: model view, head view, matrix and sieve grid of one page's inputs.
   No library, no network. The data is the JSON of headstats.report.viewer.payload (read its docstring). */
(function(){
"use strict";
const root=document.getElementById(HS_ROOT_ID);
const D=JSON.parse(root.querySelector('script.hs-data').textContent);
const $=s=>root.querySelector(s);
const NS='http://www.w3.org/2000/svg';
const C=['#0072B2','#D55E00','#009E73','#CC79A7','#E69F00','#56B4E9','#000000','#332288','#999933','#882255','#44AA99','#AA4499',
 '#117733','#88CCEE','#DDCC77','#661100'];
const colour=h=>C[h%C.length];
const L=D.n_layers,H=D.n_heads,ST=D.stats||null;
const S={input:0,mode:'model',layer:0,heads:[0],words:false,sieve:'local',keys:[],scale:'bias',row0:0,rows:0,role:''};

// ------------------------------------------------------------------ data
function b64(s){const b=atob(s);const u=new Uint8Array(b.length);for(let i=0;i<b.length;i++)u[i]=b.charCodeAt(i);return u;}
// the page's bytes are zlib-compressed (payload.packed): unpacked once, before the first drawing
async function inflate(s){const ds=new DecompressionStream('deflate');
 return new Uint8Array(await new Response(new Blob([b64(s)]).stream().pipeThrough(ds)).arrayBuffer());}
async function unpack(v){v.bytes=await inflate(v.data);v.sieveBytes=await inflate(v.sieve_data);}
function decode(v){
 if(v.heads)return v;const u=v.bytes;const n=v.tokens.length;const wd=v.width;let p=0;
 const rd=()=>{const x=wd===1?u[p]:u[p]|(u[p+1]<<8);p+=wd;return x;};v.heads=[];
 for(let l=0;l<L;l++){const row=[];for(let h=0;h<H;h++){
  const cnt=[];let m=0;for(let i=0;i<n;i++){const c=rd();cnt.push(c);m+=c;}
  const ks=[];for(let r=0;r<m;r++)ks.push(rd());const e=[];let t=0;
  for(let i=0;i<n;i++)for(let c=0;c<cnt[i];c++,t++)e.push(i,ks[t],u[p+t]);p+=m;row.push(e);}v.heads.push(row);}
 const sv=v.sieveBytes;v.sv=new Float32Array(sv.buffer,sv.byteOffset,sv.length/4);
 v.nw=Math.max(...v.word)+1;v.wsize=new Array(v.nw).fill(0);v.word.forEach(w=>v.wsize[w]++);
 v.wnames=new Array(v.nw).fill('');v.tokens.forEach((t,i)=>{const w=v.word[i];
  v.wnames[w]+=(v.wnames[w]&&!v.special[i])?t.replace(/^##/,''):t.replace(/^[\u0120\u2581]/,'');});
 v.wseg=new Array(v.nw).fill(0);v.word.forEach((w,i)=>{v.wseg[w]=v.segment[i];});
 v.cache={};return v;}
function cur(){return decode(D.inputs[S.input]);}
// a head's map, dense: piece level (stored weights), or word level (a word's row is the mean of its pieces'
// rows, its column the sum of its pieces' columns: Clark et al. 2019)
function mat(v,l,h,wl){const key=l+'-'+h+(wl?'w':'');if(v.cache[key])return v.cache[key];
 const e=v.heads[l][h];const n=wl?v.nw:v.tokens.length;const M=Array.from({length:n},()=>new Float32Array(n));
 for(let i=0;i<e.length;i+=3){const a=wl?v.word[e[i]]:e[i],b=wl?v.word[e[i+1]]:e[i+1];M[a][b]+=e[i+2]/255/(wl?v.wsize[a]:1);}
 v.cache[key]=M;return M;}
const labels=v=>S.words?v.wnames:v.tokens;
const segs=v=>S.words?v.wseg:v.segment;

// ------------------------------------------------------------------ sieve bias scores (METHODS 1.2)
// v.sv holds, per layer and head, D.sieve_kinds rows of n float32: 'loc' = sum of A[i,j]/m_i over the local
// window |i-j|<=w; 'col' = sum over the counted queries i of A[i,j]/m_i; 'blk' (pairs) = sum of A[i,j]/m_i over
// the non-special keys of i's segment; m_i = mean_j A[i,j] (the row mean over the n real keys).
function row(v,l,h,kind){const k=v.sieve_kinds.indexOf(kind);if(k<0)return null;const n=v.tokens.length;
 const at=((l*H+h)*v.sieve_kinds.length+k)*n;return v.sv.subarray(at,at+n);}
function counted(v){const q=[];for(let i=0;i<v.tokens.length;i++)if(D.count_special_queries||!v.special[i])q.push(i);return q;}
function sieveKeys(v,name){const n=v.tokens.length;const all=[...Array(n).keys()];
 if(name==='delimiter')return all.filter(i=>v.special[i]);if(name==='delimiter_cls')return all.filter(i=>v.cls[i]);
 if(name==='delimiter_sep')return all.filter(i=>v.sep[i]);if(name==='keys')return S.keys.filter(i=>i<n);return null;}
// the per-input score of one head: mean over counted queries with a non-empty sieve of
//   b(i) = mean_{j in S(i)} A[i,j] / mean_{j<n} A[i,j];  'share': the attention mass inside the sieve, b(i)|S(i)|/n
function sieveScore(v,l,h,name,scale){const n=v.tokens.length;const Q=counted(v);const keys=sieveKeys(v,name);
 if(v.stored&&v.stored[name]&&scale==='bias'){const x=v.stored[name][l*H+h];return {value:x===null?NaN:x,ceiling:NaN,stored:true};}
 if(!v.sieve_kinds.length)return approxScore(v,l,h,name,scale,Q,keys);
 let total=0,m=0,ceiling=0;
 if(keys){if(!keys.length||!Q.length)return {value:NaN,ceiling:NaN};const c=row(v,l,h,'col');let s=0;for(const j of keys)s+=c[j];
  const b=s/keys.length/Q.length;return {value:scale==='share'?b*keys.length/n:b,ceiling:scale==='share'?1:n/keys.length};}
 if(name==='local'){const r=row(v,l,h,'loc');const w=D.window;
  for(const i of Q){const size=Math.min(n-1,i+w)-Math.max(0,i-w)+1;const b=r[i]/size;total+=scale==='share'?b*size/n:b;ceiling+=n/size;m++;}}
 else if(name==='block'){const r=row(v,l,h,'blk');if(!r||!v.is_pair)return {value:NaN,ceiling:NaN};
  const size=[0,0];for(let j=0;j<n;j++)if(!v.special[j])size[v.segment[j]]++;
  for(const i of Q){const s=size[v.segment[i]];if(!s)continue;const b=r[i]/s;total+=scale==='share'?b*s/n:b;ceiling+=n/s;m++;}}
 else return {value:NaN,ceiling:NaN};
 return {value:m?total/m:NaN,ceiling:scale==='share'?1:(m?ceiling/m:NaN)};}
// a report's inputs hold only their drawn weights (those under 0.01 left out): their sieves are computed from
// them, the same formula, and said to be approximate; a role's grid there is the run's stored score (v.stored)
function approxScore(v,l,h,name,scale,Q,keys){const M=mat(v,l,h,false);const n=v.tokens.length;let total=0,m=0;
 for(const i of Q){let S=keys;
  if(!S&&name==='local'){S=[];for(let j=Math.max(0,i-D.window);j<=Math.min(n-1,i+D.window);j++)S.push(j);}
  else if(!S&&name==='block'&&v.is_pair){S=[];for(let j=0;j<n;j++)if(!v.special[j]&&v.segment[j]===v.segment[i])S.push(j);}
  if(!S)return {value:NaN,ceiling:NaN};if(!S.length)continue;let rs=0,s=0;for(let j=0;j<n;j++)rs+=M[i][j];if(!rs)continue;
  for(const j of S)s+=M[i][j];total+=scale==='share'?s/rs:(s/S.length)/(rs/n);m++;}
 return {value:m?total/m:NaN,ceiling:NaN,approx:true};}
function sieves(v){const out=['local','delimiter','delimiter_cls','delimiter_sep'];if(v.is_pair)out.push('block');
 Object.keys(v.stored||{}).forEach(r=>{if(!out.includes(r))out.push(r);});out.push('keys');return out;}
const SIEVE_WORDS={local:'local (|i-j| <= '+D.window+')',delimiter:'delimiter ([CLS] and [SEP])',delimiter_cls:'delimiter_cls ([CLS])',
 delimiter_sep:'delimiter_sep ([SEP])',block:'block (own sentence)',keys:'the pieces you select'};

// ------------------------------------------------------------------ statistics of the run (optional)
const hk=(l,h)=>l+'-'+h;
function rolesOf(l,h){return ST&&ST.roles[hk(l,h)]||[];}
function tauOf(role){return ST&&ST.tau?ST.tau[role]:undefined;}
function claimsOf(l,h){const r=rolesOf(l,h);return ST?(ST.claims||[]).filter(c=>c.roles.some(x=>r.includes(x))):[];}

// ------------------------------------------------------------------ drawing helpers
function el(t,a,parent){const e=document.createElementNS(NS,t);for(const k in a)e.setAttribute(k,a[k]);if(parent)parent.appendChild(e);return e;}
function text(parent,x,y,s,a){const t=el('text',Object.assign({x:x,y:y,'font-size':12,'font-family':'sans-serif'},a||{}),parent);t.textContent=s;return t;}
function blues(x){x=Math.max(0,Math.min(1,x));const a=[247,251,255],b=[8,48,107];
 return 'rgb('+a.map((c,i)=>Math.round(c+(b[i]-c)*x)).join(',')+')';}
const svg=$('svg.hs-view');
function reset(w,h){svg.innerHTML='';svg.setAttribute('width',w);svg.setAttribute('height',h);
 svg.setAttribute('viewBox','0 0 '+w+' '+h);el('rect',{x:0,y:0,width:w,height:h,fill:'#fff'},svg);}
function windowRows(n){const a=Math.max(0,Math.min(S.row0,n-1));const b=S.rows>0?Math.min(n,a+S.rows):n;return [a,b];}
// lines from queries (x1) to keys (x2) of one map as paths, one per opacity step (few elements, any length)
function lines(parent,M,x1,x2,y,rows,stroke,width,floor,tag){const steps=8;const d=new Array(steps).fill('');
 for(const i of rows)for(let j=0;j<M.length;j++){const w=M[i][j];if(w<floor)continue;
  const k=Math.min(steps-1,Math.floor(w*steps));d[k]+='M'+x1+' '+y(i).toFixed(1)+'L'+x2+' '+y(j).toFixed(1);}
 d.forEach((p,k)=>{if(p)el('path',{d:p,stroke:stroke,'stroke-width':width,'stroke-opacity':((k+0.5)/steps).toFixed(3),fill:'none',class:tag||''},parent);});}

// ------------------------------------------------------------------ model view: every layer x head
function drawModel(){const v=cur();const lab=labels(v);const n=lab.length;const tw=64,th=Math.max(40,Math.min(90,n*3)),gx=10,gy=22,left=56,top=40;
 const W=Math.max(560,left+H*(tw+gx)),Ht=top+L*(th+gy);reset(W,Ht);
 text(svg,4,16,title('model view: every layer x head (click one for its head view)'),{'font-weight':'bold'});
 for(let h=0;h<H;h++)text(svg,left+h*(tw+gx)+tw/2,top-6,'head '+h,{'text-anchor':'middle','font-size':10,fill:colour(h)});
 for(let l=0;l<L;l++){text(svg,4,top+l*(th+gy)+th/2+4,'layer '+l,{'font-size':10});
  for(let h=0;h<H;h++){const g=el('g',{class:'hs-thumb','data-layer':l,'data-head':h,transform:'translate('+(left+h*(tw+gx))+','+(top+l*(th+gy))+')',style:'cursor:pointer'},svg);
   const r=rolesOf(l,h);el('rect',{x:0,y:0,width:tw,height:th,fill:'#fff',stroke:r.length?'#444':'#ddd','stroke-width':r.length?1.5:1},g);
   const M=mat(v,l,h,S.words);const y=i=>3+(th-6)*(n>1?i/(n-1):0.5);
   lines(g,M,6,tw-6,y,[...Array(n).keys()],colour(h),1,0.05);
   if(r.length)text(g,2,th+11,r.map(x=>ST.short[x]||x).join(' '),{'font-size':9,fill:'#444'});
   const t=el('title',{},g);t.textContent='layer '+l+', head '+h+(r.length?': '+r.join(', '):'')+statLine(v,l,h);
   g.addEventListener('click',()=>{S.mode='head';S.layer=l;S.heads=[h];render();});}}}
function statLine(v,l,h){if(!ST)return '';const parts=[];for(const role of Object.keys(ST.tau||{})){
 if(!sieves(v).includes(role))continue;const s=sieveScore(v,l,h,role,'bias').value;const t=tauOf(role);
 parts.push(role+' '+fmt(s)+(t!==undefined?(s>=t?' >= ':' < ')+'tau '+t:''));}return parts.length?'\n'+parts.join('\n'):'';}
const fmt=x=>Number.isFinite(x)?x.toFixed(3):'n/a';
function title(s){const v=cur();return v.label+': '+s+(S.words?' (words)':' (pieces)');}

// ------------------------------------------------------------------ head view: colour key + two columns
function drawHead(){const v=cur();const lab=labels(v);const seg=segs(v);const n=lab.length;const [a,b]=windowRows(n);
 const rh=16,top=36,xl=170,xr=390,W=560,Ht=top+n*rh+10;reset(W,Ht);
 text(svg,4,14,title('layer '+S.layer+', head'+(S.heads.length>1?'s ':' ')+(S.heads.join(', ')||'none')),{'font-weight':'bold'});
 S.heads.forEach((h,k)=>{el('rect',{x:4+k*46,y:20,width:10,height:10,fill:colour(h)},svg);text(svg,17+k*46,29,'h'+h,{'font-size':10});});
 const y=i=>top+i*rh+rh/2;const rows=[];for(let i=a;i<b;i++)rows.push(i);
 const groups=S.heads.map(h=>{const g=el('g',{class:'hs-lines','data-head':h},svg);lines(g,mat(v,S.layer,h,S.words),xl,xr,y,rows,colour(h),2,0.01);return g;});
 const hl=el('g',{class:'hs-focus'},svg);
 function focus(kind,i){hl.innerHTML='';groups.forEach(g=>g.setAttribute('opacity',i===null?1:0.08));if(i===null)return;
  S.heads.forEach(h=>{const M=mat(v,S.layer,h,S.words);
   if(kind==='q')lines(hl,M,xl,xr,y,[i],colour(h),2.5,0.01);
   else{const T=M.map(r=>{const z=new Float32Array(r.length);z[i]=r[i];return z;});lines(hl,T,xl,xr,y,rows,colour(h),2.5,0.01);}});}
 for(let i=0;i<n;i++){const dim=(i<a||i>=b);
  [[xl-6,'end','q'],[xr+6,'start','k']].forEach(([x,anchor,kind])=>{
   const t=text(svg,x,y(i)+4,lab[i],{'text-anchor':anchor,fill:seg[i]?'#D55E00':'#333',opacity:kind==='q'&&dim?0.35:1,style:'cursor:pointer'});
   t.addEventListener('mouseenter',()=>focus(kind,i));t.addEventListener('mouseleave',()=>focus(null,null));});}}

// ------------------------------------------------------------------ matrix (heat map) of the first head shown
function drawMatrix(){const v=cur();const lab=labels(v);const n=lab.length;const [a,b]=windowRows(n);const h=S.heads[0]??0;
 const cell=Math.max(6,Math.min(22,Math.floor(640/n)));const left=110,top=110;const W=left+n*cell+70,Ht=top+(b-a)*cell+20;reset(W,Ht);
 text(svg,4,14,title('layer '+S.layer+', head '+h+': queries down, keys across'),{'font-weight':'bold'});
 const M=mat(v,S.layer,h,S.words);let max=0;for(let i=a;i<b;i++)for(let j=0;j<n;j++)max=Math.max(max,M[i][j]);
 el('rect',{x:left,y:top,width:n*cell,height:(b-a)*cell,fill:blues(0)},svg);
 const g=el('g',{class:'hs-cells'},svg);
 for(let i=a;i<b;i++)for(let j=0;j<n;j++){const w=M[i][j];if(w<0.01)continue;
  const r=el('rect',{x:left+j*cell,y:top+(i-a)*cell,width:cell,height:cell,fill:blues(w/(max||1))},g);
  const t=el('title',{},r);t.textContent=lab[i]+' -> '+lab[j]+': '+w.toFixed(3);}
 const fs=Math.min(11,cell);
 for(let j=0;j<n;j++)text(svg,0,0,lab[j],{'font-size':fs,transform:'translate('+(left+j*cell+cell*0.7)+','+(top-4)+') rotate(-60)'});
 for(let i=a;i<b;i++)text(svg,left-4,top+(i-a)*cell+cell*0.75,lab[i],{'font-size':fs,'text-anchor':'end'});
 for(let k=0;k<=4;k++){el('rect',{x:W-50,y:top+k*16,width:14,height:14,fill:blues(k/4)},svg);text(svg,W-32,top+k*16+11,(max*k/4).toFixed(2),{'font-size':10});}}

// ------------------------------------------------------------------ sieve grid: every head's score on the chosen sieve
function drawSieve(){const v=cur();const n=v.tokens.length;if(!sieves(v).includes(S.sieve))S.sieve='local';
 const cw=52,ch=26,left=60;const W=Math.max(640,left+H*cw+20);const lab=labels(v);
 let rowsOfPick=1,px=4;lab.forEach(t=>{const w=7.5*t.length+12;if(px+w>W-4){rowsOfPick++;px=4;}px+=w+4;});
 const top=40+rowsOfPick*22+50,Ht=top+L*ch+40;reset(W,Ht);
 text(svg,4,14,v.label+': sieve '+(SIEVE_WORDS[S.sieve]||S.sieve)+', '+(S.scale==='share'?'share of attention in the sieve':'sieve bias score')+' per head',{'font-weight':'bold'});
 // the pieces, to pick keys from (click toggles; a word's pieces together in word mode)
 let x=4,yy=40;const pick=el('g',{class:'hs-pick'},svg);const keys=sieveKeys(v,S.sieve)||[];
 lab.forEach((t,k)=>{const pieces=S.words?[...Array(n).keys()].filter(i=>v.word[i]===k):[k];const on=pieces.some(i=>keys.includes(i));
  const w=7.5*t.length+12;if(x+w>W-4){x=4;yy+=22;}
  const g=el('g',{style:'cursor:pointer',class:'hs-token'+(on?' hs-on':'')},pick);
  el('rect',{x:x,y:yy-13,width:w,height:18,rx:3,fill:on?'#E69F00':'#f0f0f0',stroke:'#bbb'},g);text(g,x+5,yy,t,{'font-size':12});
  g.addEventListener('click',()=>{S.sieve='keys';const sel=new Set(S.keys);const all=pieces.every(i=>sel.has(i));pieces.forEach(i=>all?sel.delete(i):sel.add(i));
   S.keys=[...sel].sort((p,q)=>p-q);render();});x+=w+4;});
 const values=[];for(let l=0;l<L;l++){const r=[];for(let h=0;h<H;h++)r.push(sieveScore(v,l,h,S.sieve,S.scale));values.push(r);}
 const finite=values.flat().map(s=>s.value).filter(Number.isFinite);const max=finite.length?Math.max(...finite):1;
 const min=finite.length?Math.min(...finite):0;const shade=s=>max>min?(s-min)/(max-min):1;
 const ceiling=values[0][0].ceiling;const how=values[0][0].stored?'the run\'s stored per-input scores (scores.parquet); ':
  values[0][0].approx?'approximate: from the drawn weights (those under 0.01 left out); ':'';const tau=S.scale==='bias'&&S.sieve!=='keys'?tauOf(S.sieve):undefined;
 text(svg,4,top-30,how+'n = '+n+' pieces; ceiling (a head with all its attention in the sieve) = '+fmt(ceiling)+
  (tau!==undefined?'; outlined: score >= tau = '+tau:'')+(S.sieve==='keys'?(S.keys.length?'':'; click pieces above to choose the keys'):'; click pieces above to score the attention to them instead'),{'font-size':11});
 for(let h=0;h<H;h++)text(svg,left+h*cw+cw/2,top-8,'h'+h,{'text-anchor':'middle','font-size':10});
 const g=el('g',{class:'hs-grid'},svg);
 for(let l=0;l<L;l++){text(svg,4,top+l*ch+ch/2+4,'layer '+l,{'font-size':10});
  for(let h=0;h<H;h++){const s=values[l][h].value;const c=el('g',{class:'hs-cell','data-layer':l,'data-head':h,'data-v':String(s),style:'cursor:pointer'},g);
   const over=tau!==undefined&&s>=tau;
   el('rect',{x:left+h*cw,y:top+l*ch,width:cw-2,height:ch-2,fill:Number.isFinite(s)?blues(0.1+0.9*shade(s)):'#eee',stroke:over?'#D55E00':'none','stroke-width':over?2.5:0},c);
   text(c,left+h*cw+cw/2-1,top+l*ch+ch/2+3,Number.isFinite(s)?s.toFixed(2):'',{'text-anchor':'middle','font-size':10,fill:0.1+0.9*shade(s)>0.55?'#fff':'#000'});
   const t=el('title',{},c);t.textContent='layer '+l+', head '+h+': '+fmt(s)+(rolesOf(l,h).length?' ('+rolesOf(l,h).join(', ')+')':'');
   c.addEventListener('click',()=>{S.mode='head';S.layer=l;S.heads=[h];render();});}}}

// ------------------------------------------------------------------ the side panel: roles, scores against tau, claims, where most
function info(){const box=$('.hs-info');box.innerHTML='';const v=cur();const l=S.layer,h=S.heads[0];
 if(S.mode==='model'||S.mode==='sieve'||h===undefined){box.textContent='';return;}
 const add=(tag,s,cls)=>{const e=document.createElement(tag);e.textContent=s;if(cls)e.className=cls;box.appendChild(e);return e;};
 add('h4','Head '+l+'-'+h);const r=rolesOf(l,h);
 if(ST)add('p','Roles held in the run ('+ST.where+'): '+(r.length?r.join(', '):'none'));
 const ul=document.createElement('ul');box.appendChild(ul);
 for(const role of sieves(v).filter(x=>x!=='keys')){const s=sieveScore(v,l,h,role,'bias');const t=tauOf(role);const li=document.createElement('li');
  li.textContent=role+' on this input: '+fmt(s.value)+(t!==undefined?(s.value>=t?' >= ':' < ')+'tau = '+t:'')+' (ceiling '+fmt(s.ceiling)+')';ul.appendChild(li);}
 if(!ST)return;const cl=claimsOf(l,h);
 if(cl.length){add('p','Claims it takes part in (through its roles):');const u=document.createElement('ul');box.appendChild(u);
  cl.forEach(c=>{const li=document.createElement('li');li.textContent=c.claim+': '+c.sentence+' ('+c.verdict+')';u.appendChild(li);});}
 const roles=Object.keys(ST.rank||{});if(!roles.length)return;if(!roles.includes(S.role))S.role=r.find(x=>roles.includes(x))||roles[0];
 const p=add('p','Where this head does it most: the run\'s inputs ranked by its score for ');const sel=document.createElement('select');
 roles.forEach(x=>{const o=document.createElement('option');o.value=x;o.textContent=x;sel.appendChild(o);});sel.value=S.role;p.appendChild(sel);
 sel.addEventListener('change',()=>{S.role=sel.value;info();save();});
 const ol=document.createElement('ol');ol.className='hs-rank';box.appendChild(ol);
 ((ST.rank[S.role]||{})[hk(l,h)]||[]).forEach(([sid,score,words])=>{const li=document.createElement('li');
  li.textContent='#'+sid+': '+score.toFixed(3)+(words?' "'+words+'"':'');ol.appendChild(li);});}

// ------------------------------------------------------------------ controls, state in the URL fragment, export
function opt(sel,v,t){const o=document.createElement('option');o.value=v;o.textContent=t;sel.appendChild(o);}
D.inputs.forEach((v,k)=>opt($('.hs-input'),k,v.label));for(let l=0;l<L;l++)opt($('.hs-layer'),l,'layer '+l);
function keyStrip(){const box=$('.hs-key');box.innerHTML='';if(S.mode!=='head'&&S.mode!=='matrix'){box.style.display='none';return;}box.style.display='';
 for(let h=0;h<H;h++){const b=document.createElement('button');b.type='button';b.className='hs-swatch'+(S.heads.includes(h)?' hs-on':'');
  b.style.background=S.heads.includes(h)?colour(h):'#fff';b.style.borderColor=colour(h);b.style.color=S.heads.includes(h)?'#fff':colour(h);
  b.textContent=h;b.title='head '+h+(rolesOf(S.layer,h).length?': '+rolesOf(S.layer,h).join(', '):'')+' (click: toggle; shift-click: only this one)';
  b.dataset.head=h;b.addEventListener('click',ev=>{if(ev.shiftKey||S.mode==='matrix')S.heads=[h];
   else S.heads=S.heads.includes(h)?S.heads.filter(x=>x!==h):[...S.heads,h].sort((a,c)=>a-c);render();});box.appendChild(b);}
 [['all',()=>[...Array(H).keys()]],['none',()=>[]]].forEach(([t,f])=>{const b=document.createElement('button');b.type='button';b.textContent=t;
  b.addEventListener('click',()=>{S.heads=f();render();});if(S.mode==='head')box.appendChild(b);});}
function controls(){$('.hs-input').value=S.input;$('.hs-layer').value=S.layer;$('.hs-words').checked=S.words;
 root.querySelectorAll('.hs-mode').forEach(b=>b.classList.toggle('hs-on',b.dataset.mode===S.mode));
 const sv=$('.hs-sieve');sv.innerHTML='';sieves(cur()).forEach(x=>opt(sv,x,SIEVE_WORDS[x]||x));sv.value=S.sieve;$('.hs-scale').value=S.scale;
 root.querySelectorAll('.hs-for-sieve').forEach(e=>e.style.display=S.mode==='sieve'?'':'none');
 root.querySelectorAll('.hs-for-head').forEach(e=>e.style.display=(S.mode==='head'||S.mode==='matrix')?'':'none');
 $('.hs-row0').value=S.row0;$('.hs-rows').value=S.rows;}
const FIELDS={input:'i',mode:'s',layer:'i',heads:'l',words:'b',sieve:'s',keys:'l',scale:'s',row0:'i',rows:'i',role:'s'};
function save(){const p=new URLSearchParams();p.set('hs',root.id);for(const k in FIELDS){const v=S[k];p.set(k,FIELDS[k]==='l'?v.join(','):FIELDS[k]==='b'?(v?1:0):v);}
 root.dataset.state=p.toString();
 try{history.replaceState(null,'','#'+p.toString());}catch(e){/* a page without a URL of its own (an iframe's srcdoc) */}}
function load(){let p;try{p=new URLSearchParams((location.hash||'').slice(1));}catch(e){return;}
 if(p.get('hs')&&p.get('hs')!==root.id)return;
 for(const k in FIELDS){if(!p.has(k))continue;const v=p.get(k);
  S[k]=FIELDS[k]==='i'?(parseInt(v,10)||0):FIELDS[k]==='b'?v==='1':FIELDS[k]==='l'?v.split(',').filter(x=>x!=='').map(Number).filter(Number.isInteger):v;}
 S.input=Math.max(0,Math.min(D.inputs.length-1,S.input));S.layer=Math.max(0,Math.min(L-1,S.layer));
 S.heads=S.heads.filter(h=>h>=0&&h<H);if(!['model','head','matrix','sieve'].includes(S.mode))S.mode='model';
 if(!['bias','share'].includes(S.scale))S.scale='bias';}
function render(){controls();keyStrip();
 ({model:drawModel,head:drawHead,matrix:drawMatrix,sieve:drawSieve})[S.mode]();info();save();root.dataset.ready='1';}
function download(kind){const text=new XMLSerializer().serializeToString(svg);
 const name=['attention',S.input,S.mode,S.layer,S.heads.join('_')].join('_');
 const go=(blob,ext)=>{const a=document.createElement('a');a.href=URL.createObjectURL(blob);a.download=name+'.'+ext;document.body.appendChild(a);a.click();a.remove();};
 const blob=new Blob([text],{type:'image/svg+xml'});if(kind==='svg')return go(blob,'svg');
 const img=new Image();img.onload=()=>{const c=document.createElement('canvas');c.width=svg.width.baseVal.value*2;c.height=svg.height.baseVal.value*2;
  const g=c.getContext('2d');g.scale(2,2);g.drawImage(img,0,0);c.toBlob(b=>go(b,'png'));};img.src=URL.createObjectURL(blob);}
root.querySelectorAll('.hs-mode').forEach(b=>b.addEventListener('click',()=>{S.mode=b.dataset.mode;if(S.mode==='head'&&!S.heads.length)S.heads=[0];render();}));
$('.hs-input').addEventListener('change',e=>{S.input=+e.target.value;S.keys=[];render();});
$('.hs-layer').addEventListener('change',e=>{S.layer=+e.target.value;render();});
$('.hs-words').addEventListener('change',e=>{S.words=e.target.checked;render();});
$('.hs-sieve').addEventListener('change',e=>{S.sieve=e.target.value;render();});
$('.hs-scale').addEventListener('change',e=>{S.scale=e.target.value;render();});
$('.hs-row0').addEventListener('change',e=>{S.row0=Math.max(0,+e.target.value||0);render();});
$('.hs-rows').addEventListener('change',e=>{S.rows=Math.max(0,+e.target.value||0);render();});
$('.hs-svg').addEventListener('click',()=>download('svg'));$('.hs-png').addEventListener('click',()=>download('png'));
window.addEventListener('hashchange',()=>{load();render();});
if(D.start)Object.assign(S,D.start);
if(typeof DecompressionStream==='undefined'){$('.hs-info').textContent='This browser cannot unpack the page\'s data '+
 '(it needs DecompressionStream: Chrome 80, Firefox 113, Safari 16.4 or later).';}
else Promise.all(D.inputs.map(unpack)).then(()=>{load();render();});
})();
