// Conversations kept in the browser's IndexedDB (one record each, the whole
// message tree inside), with search and JSON export/import.
import { openDB } from 'idb';

const STORE = 'conversations';
export const EXPORT_FORMAT = 'oscar-webui-conversations';

export async function openStore(dbName = 'oscar-webui') {
  const db = await openDB(dbName, 1, {
    upgrade(db) {
      const s = db.createObjectStore(STORE, { keyPath: 'id' });
      s.createIndex('updatedAt', 'updatedAt');
    },
  });
  return new ConversationStore(db);
}

function matches(conv, q) {
  if (conv.title.toLowerCase().includes(q)) return true;
  return Object.values(conv.messages || {}).some((m) => (m.content || '').toLowerCase().includes(q));
}

function validConversation(c) {
  return (
    c && typeof c === 'object' && typeof c.id === 'string' && c.id && typeof c.title === 'string' &&
    c.messages && typeof c.messages === 'object' && !Array.isArray(c.messages) &&
    Object.values(c.messages).every((m) => m && typeof m.id === 'string' && typeof m.role === 'string') &&
    (c.leaf === null || c.leaf === undefined || typeof c.leaf === 'string')
  );
}

export class ConversationStore {
  constructor(db) {
    this.db = db;
  }

  // Newest first.
  async list() {
    const all = await this.db.getAll(STORE);
    return all.sort((a, b) => b.updatedAt - a.updatedAt);
  }

  get(id) {
    return this.db.get(STORE, id);
  }

  async save(conv) {
    await this.db.put(STORE, conv);
    return conv;
  }

  remove(id) {
    return this.db.delete(STORE, id);
  }

  async rename(id, title) {
    const conv = await this.get(id);
    if (!conv) throw new Error(`no conversation ${id}`);
    conv.title = title.trim() || conv.title;
    conv.updatedAt = Date.now();
    return this.save(conv);
  }

  // Conversations whose title or any message contains query (any case).
  async search(query) {
    const q = query.trim().toLowerCase();
    const all = await this.list();
    return q ? all.filter((c) => matches(c, q)) : all;
  }

  async exportAll() {
    return { format: EXPORT_FORMAT, version: 1, exportedAt: new Date().toISOString(), conversations: await this.list() };
  }

  // Adds the conversations of an export (same id: replaced). Throws, and
  // stores nothing, when the document is not an export.
  async importAll(doc) {
    if (!doc || doc.format !== EXPORT_FORMAT || !Array.isArray(doc.conversations))
      throw new Error('not an oscar web UI export (expected {"format": "' + EXPORT_FORMAT + '", "conversations": [...]})');
    const bad = doc.conversations.findIndex((c) => !validConversation(c));
    if (bad >= 0) throw new Error(`conversation ${bad} of the file is malformed`);
    const tx = this.db.transaction(STORE, 'readwrite');
    for (const c of doc.conversations) {
      tx.store.put({ system: '', contextUsed: null, createdAt: Date.now(), updatedAt: Date.now(), ...c, leaf: c.leaf ?? null });
    }
    await tx.done;
    return doc.conversations.length;
  }
}
