// Server-sent events (the text/event-stream format) parsed incrementally:
// network chunks split lines and even UTF-8 sequences anywhere, so the parser
// keeps the unfinished tail between calls and emits only complete events.

export class SseParser {
  constructor() {
    this.buffer = '';
    this.data = [];
    this.event = '';
  }

  // Feeds decoded text; returns the events it completed ({event, data}).
  feed(text) {
    this.buffer += text;
    const events = [];
    for (;;) {
      const nl = this.buffer.search(/\r\n|\r|\n/);
      if (nl < 0) break;
      // A lone '\r' at the very end may be the first half of "\r\n": wait.
      if (this.buffer[nl] === '\r' && nl === this.buffer.length - 1) break;
      const eolLength = this.buffer.startsWith('\r\n', nl) ? 2 : 1;
      const line = this.buffer.slice(0, nl);
      this.buffer = this.buffer.slice(nl + eolLength);
      const ev = this.line(line);
      if (ev) events.push(ev);
    }
    return events;
  }

  // The stream ended: an event without its blank line still counts.
  finish() {
    const events = [];
    if (this.buffer.length) {
      const ev = this.line(this.buffer);
      this.buffer = '';
      if (ev) events.push(ev);
    }
    const ev = this.line('');
    if (ev) events.push(ev);
    return events;
  }

  line(line) {
    if (line === '') {
      if (!this.data.length) {
        this.event = '';
        return null;
      }
      const ev = { event: this.event || 'message', data: this.data.join('\n') };
      this.data = [];
      this.event = '';
      return ev;
    }
    if (line.startsWith(':')) return null; // comment / keep-alive
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
    return null;
  }
}

// Reads a fetch() body as SSE and calls onEvent for each event. Resolves when
// the stream ends; rejects with the AbortError when the signal fires.
export async function readSse(body, onEvent) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    for (const ev of parser.feed(decoder.decode(value, { stream: true }))) onEvent(ev);
  }
  for (const ev of parser.feed(decoder.decode())) onEvent(ev);
  for (const ev of parser.finish()) onEvent(ev);
}
