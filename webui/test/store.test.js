import 'fake-indexeddb/auto';
import { describe, expect, it } from 'vitest';
import { openStore, EXPORT_FORMAT } from '../src/store.js';
import { appendMessage, newConversation } from '../src/tree.js';

let n = 0;
const fresh = () => openStore(`test-${n++}`);

function conv(title, text, updatedAt) {
  const c = newConversation(title, updatedAt);
  appendMessage(c, null, { role: 'user', content: text });
  c.updatedAt = updatedAt;
  return c;
}

describe('ConversationStore', () => {
  it('saves, lists newest first, renames and deletes', async () => {
    const s = await fresh();
    const a = await s.save(conv('alpha', 'apples', 1));
    const b = await s.save(conv('beta', 'bananas', 2));
    expect((await s.list()).map((c) => c.title)).toEqual(['beta', 'alpha']);
    await s.rename(a.id, '  renamed ');
    expect((await s.get(a.id)).title).toBe('renamed');
    expect((await s.list())[0].id).toBe(a.id); // renaming counts as an update
    await s.remove(b.id);
    expect((await s.list()).map((c) => c.id)).toEqual([a.id]);
    await expect(s.rename('nope', 'x')).rejects.toThrow('no conversation');
  });

  it('searches titles and message text, any case', async () => {
    const s = await fresh();
    await s.save(conv('Debian packages', 'apt install', 1));
    await s.save(conv('Cooking', 'How long to boil an EGG?', 2));
    expect((await s.search('egg')).map((c) => c.title)).toEqual(['Cooking']);
    expect((await s.search('DEBIAN')).map((c) => c.title)).toEqual(['Debian packages']);
    expect(await s.search('zebra')).toEqual([]);
    expect(await s.search('  ')).toHaveLength(2);
  });

  it('exports and imports the same conversations into another database', async () => {
    const s = await fresh();
    const c = await s.save(conv('kept', 'hello', 5));
    const doc = JSON.parse(JSON.stringify(await s.exportAll()));
    expect(doc.format).toBe(EXPORT_FORMAT);
    const t = await fresh();
    expect(await t.importAll(doc)).toBe(1);
    const back = await t.get(c.id);
    expect(back.title).toBe('kept');
    expect(back.messages).toEqual(c.messages);
    expect(back.leaf).toBe(c.leaf);
  });

  it('refuses a file that is not an export, storing nothing', async () => {
    const s = await fresh();
    await expect(s.importAll({ hello: 1 })).rejects.toThrow('not an oscar web UI export');
    const good = newConversation('ok');
    await expect(s.importAll({ format: EXPORT_FORMAT, conversations: [good, { id: 3 }] })).rejects.toThrow('conversation 1');
    expect(await s.list()).toEqual([]);
  });
});
