import { describe, expect, it } from 'vitest';
import { appendMessage, latestLeafUnder, newConversation, pathTo, siblingsOf, switchBranch, titleFrom, toApiMessages } from '../src/tree.js';

describe('conversation tree', () => {
  it('branches on edit and regenerate, and switching shows the newest leaf of a branch', () => {
    const c = newConversation();
    const u1 = appendMessage(c, null, { role: 'user', content: 'hi' });
    const a1 = appendMessage(c, u1.id, { role: 'assistant', content: 'first' });
    const a2 = appendMessage(c, u1.id, { role: 'assistant', content: 'second' }); // regenerate
    expect(pathTo(c).map((m) => m.content)).toEqual(['hi', 'second']);
    expect(siblingsOf(c, a1.id).map((m) => m.id)).toEqual([a1.id, a2.id]);

    switchBranch(c, a2.id, 0);
    expect(c.leaf).toBe(a1.id);
    const u3 = appendMessage(c, a1.id, { role: 'user', content: 'more' });
    switchBranch(c, a1.id, 1);
    expect(c.leaf).toBe(a2.id);
    switchBranch(c, a2.id, 0);
    expect(c.leaf).toBe(u3.id); // back to the newest leaf below a1
    expect(latestLeafUnder(c, u1.id)).toBe(a2.id);

    // Editing the first user message: a new root sibling.
    const e1 = appendMessage(c, null, { role: 'user', content: 'hello' });
    expect(pathTo(c).map((m) => m.content)).toEqual(['hello']);
    expect(siblingsOf(c, e1.id)).toHaveLength(2);
  });

  it('ignores an out-of-range branch index', () => {
    const c = newConversation();
    const u = appendMessage(c, null, { role: 'user', content: 'x' });
    expect(switchBranch(c, u.id, 3)).toBe(u.id);
  });

  it('builds API messages with the system prompt, attachments and tool calls', () => {
    const c = newConversation();
    c.system = 'Be brief.';
    const u = appendMessage(c, null, { role: 'user', content: 'Summarise', attachments: [{ name: 'a.txt', text: 'alpha' }] });
    const calls = [{ id: 'c0', type: 'function', function: { name: 'f', arguments: '{}' } }];
    const a = appendMessage(c, u.id, { role: 'assistant', content: '', toolCalls: calls });
    appendMessage(c, a.id, { role: 'tool', content: '42', toolCallId: 'c0' });
    const msgs = toApiMessages(c);
    expect(msgs[0]).toEqual({ role: 'system', content: 'Be brief.' });
    expect(msgs[1].content).toContain('a.txt');
    expect(msgs[1].content).toContain('alpha');
    expect(msgs[1].content.endsWith('Summarise')).toBe(true);
    expect(msgs[2].tool_calls).toEqual(calls);
    expect(msgs[3]).toEqual({ role: 'tool', content: '42', tool_call_id: 'c0' });
  });

  it('titles from the first message, shortened', () => {
    expect(titleFrom('  hello\n world ')).toBe('hello world');
    expect(titleFrom('x'.repeat(100))).toHaveLength(48);
    expect(titleFrom('')).toBe('New chat');
  });
});
