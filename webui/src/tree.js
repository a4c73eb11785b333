// A conversation is a tree of messages: editing a user message or
// regenerating a reply adds a sibling instead of overwriting, so every
// branch stays reachable. `leaf` names the branch on screen.

export function newId() {
  // crypto.randomUUID() exists only in secure contexts; the page may be
  // opened over plain http on a LAN address, so ids are built by hand.
  return Date.now().toString(36) + Math.random().toString(36).slice(2, 10);
}

export function newConversation(title = 'New chat', now = Date.now()) {
  return { id: newId(), title, createdAt: now, updatedAt: now, system: '', messages: {}, leaf: null, contextUsed: null };
}

// Messages from the root to leafId (the shown branch by default).
export function pathTo(conv, leafId = conv.leaf) {
  const path = [];
  const seen = new Set();
  for (let id = leafId; id && conv.messages[id] && !seen.has(id); id = conv.messages[id].parent) {
    seen.add(id);
    path.push(conv.messages[id]);
  }
  return path.reverse();
}

let lastStamp = 0;
// Strictly increasing timestamps keep sibling order stable within one millisecond.
function stamp() {
  lastStamp = Math.max(Date.now(), lastStamp + 1);
  return lastStamp;
}

// Adds msg under parentId (null: a new root) and makes it the shown leaf.
export function appendMessage(conv, parentId, msg) {
  const m = { ...msg, id: newId(), parent: parentId ?? null, createdAt: stamp() };
  conv.messages[m.id] = m;
  conv.leaf = m.id;
  conv.updatedAt = Date.now();
  return m;
}

export function childrenOf(conv, id) {
  return Object.values(conv.messages)
    .filter((m) => (m.parent ?? null) === (id ?? null))
    .sort((a, b) => a.createdAt - b.createdAt);
}

export function siblingsOf(conv, id) {
  const m = conv.messages[id];
  return m ? childrenOf(conv, m.parent) : [];
}

// The newest leaf below id (following the newest child at each step).
export function latestLeafUnder(conv, id) {
  let cur = id;
  for (;;) {
    const kids = childrenOf(conv, cur);
    if (!kids.length) return cur;
    cur = kids[kids.length - 1].id;
  }
}

// Shows sibling number `index` of message id (and the newest branch below it).
export function switchBranch(conv, id, index) {
  const sibs = siblingsOf(conv, id);
  if (index < 0 || index >= sibs.length) return conv.leaf;
  conv.leaf = latestLeafUnder(conv, sibs[index].id);
  return conv.leaf;
}

// The request's messages for a branch: the system prompt first, then each
// message in the API's shape (tool calls and tool results kept).
export function toApiMessages(conv, path = pathTo(conv)) {
  const out = [];
  if (conv.system && conv.system.trim()) out.push({ role: 'system', content: conv.system });
  for (const m of path) {
    const api = { role: m.role, content: m.content ?? '' };
    if (m.role === 'user' && m.attachments?.length) {
      api.content = m.attachments.map((a) => `File ${a.name}:\n\`\`\`\n${a.text}\n\`\`\`\n`).join('\n') + api.content;
    }
    if (m.toolCalls?.length) api.tool_calls = m.toolCalls;
    if (m.toolCallId) api.tool_call_id = m.toolCallId;
    out.push(api);
  }
  return out;
}

// A title from the first user message.
export function titleFrom(text) {
  const t = text.replace(/\s+/g, ' ').trim();
  return t.length > 48 ? t.slice(0, 47) + '…' : t || 'New chat';
}
