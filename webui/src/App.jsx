// The chat page's layout: top bar, conversation list, messages, composer,
// KV panel and dialogs. State and actions live in useChat (conversations)
// and useServerState (props, slots, metrics).
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { Api } from './api.js';
import { serverDefaults } from './settings.js';
import { pathTo, siblingsOf } from './tree.js';
import { Sidebar } from './components/Sidebar.jsx';
import { MessageView } from './components/MessageView.jsx';
import { Composer } from './components/Composer.jsx';
import { SettingsDialog } from './components/SettingsDialog.jsx';
import { KeyDialog } from './components/KeyDialog.jsx';
import { KvPanel } from './components/KvPanel.jsx';
import { usePersistent, useServerState } from './hooks.js';
import { useChat } from './use_chat.js';

const wide = () => window.matchMedia('(min-width: 900px)').matches;
const prefersDark = () => window.matchMedia('(prefers-color-scheme: dark)').matches;

function Messages({ chat, listRef, modelName }) {
  const { conv, busy } = chat;
  const path = conv ? pathTo(conv) : [];
  return (
    <div class="messages" ref={listRef} data-testid="messages">
      {!path.length && (
        <div class="welcome">
          <h2>Chat with {modelName || 'the model'}</h2>
          <p>The KV cache is stored at about 2 bits per value: open <b>KV</b> to see what that saves.</p>
        </div>
      )}
      {path.map((m) => {
        const sibs = siblingsOf(conv, m.id);
        return (
          <MessageView key={m.id} msg={m} streaming={!!m.streaming} busy={busy}
            branch={{ index: sibs.findIndex((s) => s.id === m.id), count: sibs.length }}
            onSwitch={(i) => chat.showBranch(m, i)} onEdit={(t) => chat.edit(m, t)} onRegenerate={() => chat.regenerate(m)} />
        );
      })}
    </div>
  );
}

export function App({ store }) {
  const [apiKey, setApiKey] = usePersistent('oscar-api-key', '');
  const keyRef = useRef(apiKey);
  keyRef.current = apiKey;
  const api = useRef(new Api(() => keyRef.current)).current;

  const [theme, setTheme] = usePersistent('oscar-theme', prefersDark() ? 'dark' : 'light');
  const [overrides, setOverrides] = usePersistent('oscar-sampling', {});
  const [notice, setNotice] = useState('');
  const [needKey, setNeedKey] = useState('');
  const [showSettings, setShowSettings] = useState(false);
  const [showSidebar, setShowSidebar] = useState(false);
  const [showKv, setShowKv] = useState(wide());
  const listRef = useRef(null);

  const onAuth = useCallback((msg) => setNeedKey(msg || 'The server wants an API key.'), []);
  const [polling, setPolling] = useState(false);
  const server = useServerState(api, showKv || polling, useCallback((e) => onAuth(e.message), []));
  const scrollDown = () => {
    const el = listRef.current;
    if (el && el.scrollHeight - el.scrollTop - el.clientHeight < 160) el.scrollTop = el.scrollHeight;
  };
  const chat = useChat({ store, api, overrides, onAuth, onNotice: setNotice, onStreamed: scrollDown, onReplyDone: server.refresh });
  useEffect(() => setPolling(chat.busy), [chat.busy]);
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
  }, [theme]);

  const path = chat.conv ? pathTo(chat.conv) : [];
  const lastTimings = [...path].reverse().find((m) => m.timings)?.timings;

  return (
    <div class={`app ${showSidebar ? 'with-sidebar' : ''} ${showKv ? 'with-kv' : ''}`}>
      <header class="topbar">
        <button type="button" class="icon menu" aria-label="conversations" onClick={() => setShowSidebar(!showSidebar)}>☰</button>
        <h1 title={server.props?.model_path}>oscar <span class="model">{server.props?.model_alias || ''}</span></h1>
        <div class="spacer" />
        <button type="button" data-testid="toggle-kv" aria-pressed={showKv} onClick={() => setShowKv(!showKv)}>KV</button>
        <button type="button" data-testid="open-settings" aria-label="settings" onClick={() => setShowSettings(true)}>⚙</button>
        <button type="button" data-testid="toggle-theme" aria-label="light or dark" onClick={() => setTheme(theme === 'dark' ? 'light' : 'dark')}>
          {theme === 'dark' ? '☀' : '☾'}
        </button>
      </header>

      <Sidebar conversations={chat.list} currentId={chat.conv?.id} query={chat.query} onQuery={chat.setQuery}
        onNew={() => { chat.newChat(); setShowSidebar(false); }}
        onOpen={(id) => { chat.open(id); setShowSidebar(false); }}
        onRename={chat.rename} onDelete={chat.remove} onExport={chat.exportAll} onImport={chat.importAll} />

      <main class="chat">
        <Messages chat={chat} listRef={listRef} modelName={server.props?.model_alias} />
        {notice && <div class="notice" role="status" onClick={() => setNotice('')}>{notice} ✕</div>}
        <Composer busy={chat.busy} onSend={chat.send} onStop={chat.stop} onError={setNotice} />
      </main>

      {showKv && (
        <KvPanel props={server.props} slots={server.slots} metrics={server.metrics} error={server.error}
          contextUsed={chat.conv?.contextUsed} timings={lastTimings} onClose={() => setShowKv(false)} />
      )}
      {showSettings && (
        <SettingsDialog system={chat.conv?.system || ''} overrides={overrides} defaults={serverDefaults(server.props)}
          onClose={() => setShowSettings(false)}
          onSave={(sys, o) => { setOverrides(o); chat.setSystem(sys); setShowSettings(false); }} />
      )}
      {needKey && (
        <KeyDialog message={apiKey ? 'The key given was refused.' : ''}
          onSave={(k) => { keyRef.current = k; setApiKey(k); setNeedKey(''); server.refresh(); }} />
      )}
    </div>
  );
}
