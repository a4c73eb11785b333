import { describe, expect, it } from 'vitest';
import { SseParser, readSse } from '../src/sse.js';

describe('SseParser', () => {
  it('emits an event only once its blank line arrives, across arbitrary splits', () => {
    const text = 'data: {"a":1}\n\ndata: {"b":2}\n\n';
    for (let cut = 0; cut <= text.length; cut++) {
      const p = new SseParser();
      const evs = [...p.feed(text.slice(0, cut)), ...p.feed(text.slice(cut)), ...p.finish()];
      expect(evs.map((e) => e.data)).toEqual(['{"a":1}', '{"b":2}']);
    }
  });

  it('handles CRLF split between chunks, comments, event names and multi-line data', () => {
    const p = new SseParser();
    const evs = [
      ...p.feed(': keep-alive\r'),
      ...p.feed('\nevent: error\r\ndata: line1\r\ndata:line2\r'),
      ...p.feed('\n\r\n'),
    ];
    expect(evs).toEqual([{ event: 'error', data: 'line1\nline2' }]);
  });

  it('keeps an unterminated last event for finish()', () => {
    const p = new SseParser();
    expect(p.feed('data: [DONE]')).toEqual([]);
    expect(p.finish()).toEqual([{ event: 'message', data: '[DONE]' }]);
  });

  it('reads a byte stream whose chunks split a UTF-8 character', async () => {
    const bytes = new TextEncoder().encode('data: {"t":"héllo ✓"}\n\n');
    const body = new ReadableStream({
      start(c) {
        for (let i = 0; i < bytes.length; i += 3) c.enqueue(bytes.slice(i, i + 3));
        c.close();
      },
    });
    const got = [];
    await readSse(body, (e) => got.push(JSON.parse(e.data).t));
    expect(got).toEqual(['héllo ✓']);
  });
});
