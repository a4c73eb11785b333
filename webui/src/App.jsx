// The chat page: owns the open conversation, the stream in flight and the
// server's state; the components below only render and report clicks.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { Api, AuthError } from './api.js';
import { contextUsed } from './chat_stream.js';
import { requestParams, serverDefaults } from './settings.js';
import { appendMessage, newConversation, pathTo, siblingsOf, switchBranch, titleFrom, toApiMessages } from './tree.js';
import { Sidebar } from './components/Sidebar.jsx';
import { MessageView } from './components/MessageView.jsx';
import { Composer } from './components/Composer.jsx';
import { SettingsDialog } from './components/SettingsDialog.jsx';
import { KeyDialog } from './components/KeyDialog.jsx';
import { KvPanel } from './components/KvPanel.jsx';
import { usePersistent, useServerState } from './hooks.js';

const wide = () => window.matchMedia('(min-width: 900px)').matches;

export function App({ store }) {
  const [apiKey, setApiKey] = usePersistent('oscar-api-key', '');
  const keyRef = useRef(apiKey);
  keyRef.current = apiKey;
  const api = useRef(new Api(() => keyRef.current)).current;

  const [theme, setTheme] = usePersistent('oscar-theme', matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light');
  const [overrides, setOverrides] = usePersistent('oscar-sampling', {});
  const [list, setList] = useState([]);
  const [query, setQuery] = useState('');
  const [conv, setConv] = useState(null);
  const [, setTick] = useState(0);
  const rerender = () => setTick((t) => t + 1);
  const [busy, setBusy] = useState(false);
  const [notice, setNotice] = useState('');
  const [needKey, setNeedKey] = useState('');
  const [showSettings, setShowSettings] = useState(false);
  const [showSidebar, setShowSidebar] = useState(false);
  const [showKv, setShowKv] = useState(wide());
  const abortRef = useRef(null);
  const listRef = useRef(null);

  const onAuth = useCallback((e) => setNeedKey(e.message), []);
  const server = useServerState(api, showKv || busy, onAuth);

  useEffect(() => {
    document.documentElement.dataset.theme = theme;
  }, [theme]);

  const refreshList = useCallback(async (q = query) => setList(await store.search(q)), [store, query]);
  useEffect(() => {
    refreshList(query);
  }, [query]);
  // Open the newest conversation at start.
  useEffect(() => {
    store.list().then((all) => all.length && setConv(all[0]));
  }, []);

  const scrollDown = () => {
    const el = listRef.current;
    if (el && el.scrollHeight - el.scrollTop - el.clientHeight < 160) el.scrollTop = el.scrollHeight;
  };

  async function save(c) {
    c.updatedAt = Date.now();
    await store.save(c);
    refreshList();
  }

  // Streams a reply to the message parentId of conversation c.
  async function generate(c, parentId) {
    const messages = toApiMessages(c, pathTo(c, parentId));
    const msg = appendMessage(c, parentId, { role: 'assistant', content: '', reasoning: '' });
    const ctrl = new AbortController();
    abortRef.current = ctrl;
    setBusy(true);
    msg.streaming = true;
    rerender();
    let frame = 0;
    try {
      const reply = await api.streamChat(messages, requestParams(overrides), ctrl.signal, (r) => {
        msg.content = r.content;
        msg.reasoning = r.reasoning;
        msg.toolCalls = r.toolCalls.length ? r.toolCalls : undefined;
        if (!frame) frame = requestAnimationFrame(() => { frame = 0; rerender(); scrollDown(); });
      });
      Object.assign(msg, { content: reply.content, reasoning: reply.reasoning, timings: reply.timings, usage: reply.usage,
        finishReason: reply.finishReason, aborted: reply.aborted || undefined });
      if (reply.toolCalls.length) msg.toolCalls = reply.toolCalls;
      const used = contextUsed(reply);
      if (used !== null) c.contextUsed = used;
    } catch (e) {
      if (e.name === 'AbortError') msg.aborted = true;
      else msg.error = e.message;
      if (e instanceof AuthError) setNeedKey(e.message);
    } finally {
      if (frame) cancelAnimationFrame(frame);
      delete msg.streaming;
      abortRef.current = null;
      setBusy(false);
      await save(c);
      server.refresh();
      rerender();
    }
  }

  async function send(text, attachments) {
    let c = conv;
    if (!c) {
      c = newConversation();
      setConv(c);
    }
    if (!Object.keys(c.messages).length) c.title = titleFrom(text || attachments[0]?.name || '');
    const user = appendMessage(c, c.leaf, { role: 'user', content: text, attachments: attachments.length ? attachments : undefined });
    await save(c);
    await generate(c, user.id);
  }

  async function edit(m, text) {
    const user = appendMessage(conv, m.parent, { role: 'user', content: text, attachments: m.attachments });
    await save(conv);
    await generate(conv, user.id);
  }

  async function open(id) {
    const c = id === conv?.id ? conv : await store.get(id);
    if (c) setConv(c);
    setShowSidebar(false);
  }

  async function remove(id) {
    await store.remove(id);
    if (conv?.id === id) setConv(null);
    refreshList();
  }

  async function exportAll() {
    const doc = await store.exportAll();
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([JSON.stringify(doc, null, 2)], { type: 'application/json' }));
    a.download = `oscar-conversations-${new Date().toISOString().slice(0, 10)}.json`;
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  }

  async function importAll(text) {
    try {
      const n = await store.importAll(JSON.parse(text));
      setNotice(`Imported ${n} conversation${n === 1 ? '' : 's'}`);
      refreshList();
    } catch (e) {
      setNotice(`Import failed: ${e.message}`);
    }
  }

  const path = conv ? pathTo(conv) : [];
  const defaults = serverDefaults(server.props);
  const lastTimings = [...path].reverse().find((m) => m.timings)?.timings;

  return (
    <div class={`app ${showSidebar ? 'with-sidebar' : ''} ${showKv ? 'with-kv' : ''}`}>
      <header class="topbar">
        <button type="button" class="icon menu" aria-label="conversations" onClick={() => setShowSidebar(!showSidebar)}>☰</button>
        <h1 title={server.props?.model_path}>oscar <span class="model">{server.props?.model_alias || ''}</span></h1>
        <div class="spacer" />
        <button type="button" data-testid="toggle-kv" aria-pressed={showKv} onClick={() => setShowKv(!showKv)}>KV</button>
        <button type="button" data-testid="open-settings" onClick={() => setShowSettings(true)}>⚙</button>
        <button type="button" data-testid="toggle-theme" aria-label="light or dark" onClick={() => setTheme(theme === 'dark' ? 'light' : 'dark')}>
          {theme === 'dark' ? '☀' : '☾'}
        </button>
      </header>

      <Sidebar conversations={list} currentId={conv?.id} query={query} onQuery={setQuery}
        onNew={() => { setConv(null); setShowSidebar(false); }} onOpen={open}
        onRename={async (id, t) => { const c = await store.rename(id, t); if (conv?.id === id) conv.title = c.title; refreshList(); }}
        onDelete={remove} onExport={exportAll} onImport={importAll} />

      <main class="chat">
        <div class="messages" ref={listRef} data-testid="messages">
          {!path.length && (
            <div class="welcome">
              <h2>Chat with {server.props?.model_alias || 'the model'}</h2>
              <p>The KV cache is stored at about 2 bits per value: open <b>KV</b> to see what that saves.</p>
            </div>
          )}
          {path.map((m) => {
            const sibs = siblingsOf(conv, m.id);
            return (
              <MessageView key={m.id} msg={m} streaming={!!m.streaming} busy={busy}
                branch={{ index: sibs.findIndex((s) => s.id === m.id), count: sibs.length }}
                onSwitch={(i) => { switchBranch(conv, m.id, i); save(conv); rerender(); }}
                onEdit={(t) => edit(m, t)}
                onRegenerate={() => generate(conv, m.parent)} />
            );
          })}
        </div>
        {notice && <div class="notice" role="status" onClick={() => setNotice('')}>{notice} ✕</div>}
        <Composer busy={busy} onSend={send} onStop={() => abortRef.current?.abort()} onError={setNotice} />
      </main>

      {showKv && (
        <KvPanel props={server.props} slots={server.slots} metrics={server.metrics} error={server.error}
          contextUsed={conv?.contextUsed} timings={lastTimings} onClose={() => setShowKv(false)} />
      )}

      {showSettings && (
        <SettingsDialog system={conv?.system || ''} overrides={overrides} defaults={defaults} onClose={() => setShowSettings(false)}
          onSave={(sys, o) => {
            setOverrides(o);
            let c = conv;
            if (sys !== (c?.system || '')) {
              if (!c) { c = newConversation(); setConv(c); }
              c.system = sys;
              save(c);
            }
            setShowSettings(false);
          }} />
      )}
      {needKey && (
        <KeyDialog message={apiKey ? 'The key given was refused.' : ''}
          onSave={(k) => { keyRef.current = k; setApiKey(k); setNeedKey(''); server.refresh(); }} />
      )}
    </div>
  );
}
