// @vitest-environment jsdom
// The message component as the user sees it: reasoning open while the model
// thinks and folded once the answer starts, Markdown rendered and sanitised,
// code blocks highlighted with a copy button, tool calls readable.
import { describe, expect, it, afterEach } from 'vitest';
import { render } from 'preact';
import { act } from 'preact/test-utils';
import { MessageView } from '../src/components/MessageView.jsx';

const noop = () => {};
const branch = { index: 0, count: 1 };
let root;

function show(msg, streaming) {
  root ||= document.body.appendChild(document.createElement('div'));
  act(() => render(<MessageView msg={msg} streaming={streaming} branch={branch} busy={streaming}
    onEdit={noop} onRegenerate={noop} onSwitch={noop} />, root));
  return root;
}

afterEach(() => {
  if (root) render(null, root);
});

describe('MessageView', () => {
  it('shows reasoning open while thinking and folds it when the answer starts', () => {
    const msg = { id: 'a', role: 'assistant', content: '', reasoning: 'Let me think' };
    let el = show(msg, true);
    const details = el.querySelector('details.reasoning');
    expect(details.open).toBe(true);
    expect(details.querySelector('summary').textContent).toBe('Thinking…');
    el = show({ ...msg, content: 'The answer' }, true);
    expect(el.querySelector('details.reasoning').open).toBe(false);
    expect(el.querySelector('.msg-body').textContent).toContain('The answer');
    el = show({ ...msg, content: 'The answer' }, false);
    expect(el.querySelector('details.reasoning summary').textContent).toMatch(/^Thought/);
  });

  it('renders Markdown with highlighted code and a copy button, and drops script', () => {
    const content = '**bold** text\n\n```js\nconst x = 1;\n```\n\n<img src=x onerror="window.__bad=1"><script>window.__bad=2</script>';
    const el = show({ id: 'b', role: 'assistant', content }, false);
    expect(el.querySelector('.md strong').textContent).toBe('bold');
    expect(el.querySelector('.code-block code.hljs .hljs-keyword').textContent).toBe('const');
    expect(el.querySelector('.code-block .copy-code').textContent).toBe('Copy');
    expect(el.querySelector('script')).toBeNull();
    expect(el.querySelector('img').getAttribute('onerror')).toBeNull();
  });

  it('shows tool calls with their arguments pretty-printed', () => {
    const toolCalls = [{ id: 'c', type: 'function', function: { name: 'lookup', arguments: '{"q":"apt"}' } }];
    const el = show({ id: 'c', role: 'assistant', content: '', toolCalls }, false);
    const call = el.querySelector('[data-testid="tool-call"]');
    expect(call.textContent).toContain('lookup');
    expect(call.querySelector('pre').textContent).toBe('{\n  "q": "apt"\n}');
  });

  it('offers edit on user messages and regenerate on replies, not while streaming', () => {
    let el = show({ id: 'd', role: 'user', content: 'hi' }, false);
    expect(el.querySelector('[data-testid="edit"]')).not.toBeNull();
    expect(el.querySelector('[data-testid="regenerate"]')).toBeNull();
    el = show({ id: 'e', role: 'assistant', content: 'yo' }, false);
    expect(el.querySelector('[data-testid="regenerate"]')).not.toBeNull();
    el = show({ id: 'e', role: 'assistant', content: 'yo' }, true);
    expect(el.querySelector('.msg-actions')).toBeNull();
  });
});
