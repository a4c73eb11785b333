// The conversations and the stream in flight: the open conversation, the
// list in the sidebar, and every action on them (send, stop, regenerate,
// edit, switch branch, open, rename, delete, export, import). Components call
// these; they never touch the store or the API themselves.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { AuthError } from './api.js';
import { contextUsed } from './chat_stream.js';
import { requestParams } from './settings.js';
import { appendMessage, newConversation, pathTo, switchBranch, titleFrom, toApiMessages } from './tree.js';

// api, store; overrides: sampling values to send; onAuth(message) after a 401;
// onNotice(text) for one-line messages; onStreamed() after each painted update.
export function useChat({ store, api, overrides, onAuth, onNotice, onStreamed, onReplyDone }) {
  const [list, setList] = useState([]);
  const [query, setQuery] = useState('');
  const [conv, setConv] = useState(null);
  const [busy, setBusy] = useState(false);
  const [, setTick] = useState(0);
  const rerender = () => setTick((t) => t + 1);
  const abortRef = useRef(null);

  const refreshList = useCallback(async (q = query) => setList(await store.search(q)), [store, query]);
  useEffect(() => {
    refreshList(query);
  }, [query]);
  // Open the newest conversation at start.
  useEffect(() => {
    store.list().then((all) => all.length && setConv(all[0]));
  }, []);

  async function save(c) {
    c.updatedAt = Date.now();
    await store.save(c);
    refreshList();
  }

  // Streams a reply to message parentId of conversation c (a new sibling
  // when parentId already has replies).
  async function generate(c, parentId) {
    const messages = toApiMessages(c, pathTo(c, parentId));
    const msg = appendMessage(c, parentId, { role: 'assistant', content: '', reasoning: '', streaming: true });
    const ctrl = new AbortController();
    abortRef.current = ctrl;
    setBusy(true);
    rerender();
    let frame = 0;
    try {
      const reply = await api.streamChat(messages, requestParams(overrides), ctrl.signal, (r) => {
        msg.content = r.content;
        msg.reasoning = r.reasoning;
        msg.toolCalls = r.toolCalls.length ? r.toolCalls : undefined;
        // One paint per animation frame, however fast the tokens come.
        if (!frame) frame = requestAnimationFrame(() => { frame = 0; rerender(); onStreamed(); });
      });
      Object.assign(msg, { content: reply.content, reasoning: reply.reasoning, timings: reply.timings, usage: reply.usage,
        finishReason: reply.finishReason, aborted: reply.aborted || undefined });
      if (reply.toolCalls.length) msg.toolCalls = reply.toolCalls;
      // A stopped reply brings no usage: the figure is unknown until the next one.
      c.contextUsed = contextUsed(reply);
    } catch (e) {
      if (e.name === 'AbortError') msg.aborted = true;
      else msg.error = e.message;
      c.contextUsed = null;
      if (e instanceof AuthError) onAuth(e.message);
    } finally {
      if (frame) cancelAnimationFrame(frame);
      delete msg.streaming;
      abortRef.current = null;
      setBusy(false);
      await save(c);
      onReplyDone();
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

  function showBranch(m, index) {
    switchBranch(conv, m.id, index);
    save(conv);
    rerender();
  }

  async function open(id) {
    const c = id === conv?.id ? conv : await store.get(id);
    if (c) setConv(c);
  }

  async function rename(id, title) {
    const c = await store.rename(id, title);
    if (conv?.id === id) conv.title = c.title;
    refreshList();
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
      onNotice(`Imported ${n} conversation${n === 1 ? '' : 's'}`);
      refreshList();
    } catch (e) {
      onNotice(`Import failed: ${e.message}`);
    }
  }

  // The system prompt belongs to the conversation (a new one if none is open).
  function setSystem(text) {
    if (text === (conv?.system || '')) return;
    const c = conv || newConversation();
    if (!conv) setConv(c);
    c.system = text;
    save(c);
  }

  return {
    list, query, setQuery, conv, busy,
    newChat: () => setConv(null),
    stop: () => abortRef.current?.abort(),
    send, edit, regenerate: (m) => generate(conv, m.parent), showBranch,
    open, rename, remove, exportAll, importAll, setSystem,
  };
}
