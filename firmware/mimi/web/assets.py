"""The web app's style sheet and script (``/app.css``, ``/app.js``), as constants: frozen
into the firmware they stay in flash and cost no heap (issue 16: "served from flash").

The script runs the chat page only: it opens the WebSocket at ``/ws`` (the session
cookie goes with it), sends ``{"type":"message","content":...,"chat_id":"web"}`` and shows
what comes back (``response``, ``typing``, ``progress``, ``done``, ``error``; see
``mimi.web.gateway``). Everything else is plain HTML forms.
"""

CSS = b"""body{font:15px/1.45 system-ui,sans-serif;margin:0;background:#f6f6f4;color:#222}
nav{background:#2d3a4a;padding:.5em 1em;display:flex;gap:1em;flex-wrap:wrap;align-items:center}
nav a{color:#fff;text-decoration:none}nav a.on{font-weight:bold;text-decoration:underline}
nav form{margin-left:auto}main{max-width:52em;margin:1em auto;padding:0 1em}
pre{background:#fff;border:1px solid #ddd;padding:.6em;white-space:pre-wrap;overflow-wrap:anywhere}
textarea{width:100%;min-height:24em;font:13px monospace;box-sizing:border-box}
input[type=text],input[type=password]{width:16em;max-width:100%;box-sizing:border-box}button{cursor:pointer}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3em;text-align:left;vertical-align:top}
#log{background:#fff;border:1px solid #ddd;height:26em;overflow-y:auto;padding:.5em}
.m{margin:.3em 0;padding:.4em .6em;border-radius:6px;white-space:pre-wrap;overflow-wrap:anywhere}
.user{background:#dbeafe;margin-left:20%}.assistant{background:#fff;border:1px solid #e4e4e4;margin-right:20%}
.note,.error{color:#777;font-size:.9em}.error{color:#b00}#say{display:flex;gap:.5em;margin-top:.5em}
#say input{flex:1;width:auto}td form{display:flex;flex-wrap:wrap;gap:.3em}td{overflow-wrap:anywhere}.msg{padding:.5em;background:#fff3cd;border:1px solid #e6d9a8}
"""

JS = b"""(function(){
var log=document.getElementById('log'),form=document.getElementById('say'),box=document.getElementById('text'),
st=document.getElementById('state'),ws=null;
function add(cls,text){var d=document.createElement('div');d.className='m '+cls;d.textContent=text;
log.appendChild(d);log.scrollTop=log.scrollHeight;return d;}
function connect(){
ws=new WebSocket((location.protocol=='https:'?'wss://':'ws://')+location.host+'/ws');
ws.onopen=function(){st.textContent='connected';};
ws.onclose=function(){st.textContent='disconnected: reconnecting';setTimeout(connect,2000);};
ws.onmessage=function(e){var m=JSON.parse(e.data);
if(m.type=='response'){st.textContent='connected';add('assistant',m.content);}
else if(m.type=='typing'){st.textContent='thinking...';}
else if(m.type=='progress'){add('note',m.content);}
else if(m.type=='done'){st.textContent='connected';}
else if(m.type=='error'){add('error',m.content);}};}
form.onsubmit=function(e){e.preventDefault();var t=box.value.trim();
if(!t||!ws||ws.readyState!=1)return;
ws.send(JSON.stringify({type:'message',content:t,chat_id:'web'}));add('user',t);box.value='';};
log.scrollTop=log.scrollHeight;connect();})();
"""
