// One message of the shown branch: Markdown body, live reasoning (folded
// once the answer starts), tool calls, and the actions that fit its role.
import { useMemo, useState } from 'preact/hooks';
import { renderMarkdown, copyText } from '../markdown.js';
import { FileIcon, ToolIcon } from './icons.jsx';

function onCodeCopy(e) {
  const btn = e.target.closest('.copy-code');
  if (!btn) return;
  const code = btn.closest('.code-block')?.querySelector('code');
  if (!code) return;
  copyText(code.textContent).then(() => {
    btn.textContent = 'Copied';
    setTimeout(() => (btn.textContent = 'Copy'), 1200);
  });
}

function Markdown({ text }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  return <div class="md" onClick={onCodeCopy} dangerouslySetInnerHTML={{ __html: html }} />;
}

function Reasoning({ text, streaming, answered }) {
  // Open while the model is thinking; folded once the answer starts.
  const thinking = streaming && !answered;
  return (
    <details class="reasoning" open={thinking} data-testid="reasoning">
      <summary>{thinking ? 'Thinking…' : `Thought (${text.length} characters)`}</summary>
      <div class="reasoning-body">{text}</div>
    </details>
  );
}

function prettyArgs(args) {
  try {
    return JSON.stringify(JSON.parse(args), null, 2);
  } catch {
    return args;
  }
}

function ToolCalls({ calls }) {
  return (
    <div class="tool-calls">
      {calls.map((c, i) => (
        <div class="tool-call" key={c.id || i} data-testid="tool-call">
          <div class="tool-call-name"><ToolIcon /> {c.function?.name || 'tool'}</div>
          <pre>{prettyArgs(c.function?.arguments || '')}</pre>
        </div>
      ))}
    </div>
  );
}

function BranchNav({ index, count, onSwitch }) {
  if (count < 2) return null;
  return (
    <span class="branch-nav" data-testid="branch-nav">
      <button type="button" disabled={index === 0} onClick={() => onSwitch(index - 1)} aria-label="previous version">‹</button>
      <span>{index + 1}/{count}</span>
      <button type="button" disabled={index === count - 1} onClick={() => onSwitch(index + 1)} aria-label="next version">›</button>
    </span>
  );
}

function Editor({ initial, onSave, onCancel }) {
  const [text, setText] = useState(initial);
  return (
    <div class="editor">
      <textarea data-testid="edit-input" value={text} onInput={(e) => setText(e.target.value)} rows={Math.min(12, text.split('\n').length + 1)} />
      <div class="editor-actions">
        <button type="button" onClick={onCancel}>Cancel</button>
        <button type="button" class="primary" data-testid="edit-save" onClick={() => onSave(text)}>Save &amp; send</button>
      </div>
    </div>
  );
}

export function MessageView({ msg, streaming, branch, busy, onEdit, onRegenerate, onSwitch }) {
  const [editing, setEditing] = useState(false);
  const role = msg.role;
  const label = { user: 'You', assistant: 'Assistant', tool: 'Tool result', system: 'System' }[role] || role;
  return (
    <div class={`msg msg-${role}`} data-testid={`msg-${role}`} data-streaming={streaming ? '1' : '0'}>
      <div class="msg-head">
        <span class="msg-role">{label}</span>
        <BranchNav index={branch.index} count={branch.count} onSwitch={onSwitch} />
      </div>
      {msg.attachments?.length > 0 && (
        <div class="attachments">
          {msg.attachments.map((a) => <span class="chip" key={a.name}><FileIcon /> {a.name}</span>)}
        </div>
      )}
      {msg.reasoning && <Reasoning text={msg.reasoning} streaming={streaming} answered={!!msg.content} />}
      {editing ? (
        <Editor
          initial={msg.content}
          onCancel={() => setEditing(false)}
          onSave={(t) => {
            setEditing(false);
            onEdit(t);
          }}
        />
      ) : role === 'tool' ? (
        <pre class="tool-result">{msg.content}</pre>
      ) : (
        <div class="msg-body" data-testid="msg-body">
          {msg.content ? <Markdown text={msg.content} /> : streaming && !msg.reasoning ? <span class="cursor">▍</span> : null}
        </div>
      )}
      {msg.toolCalls?.length > 0 && <ToolCalls calls={msg.toolCalls} />}
      {msg.error && <div class="msg-error" role="alert">{msg.error}</div>}
      {!editing && !streaming && (
        <div class="msg-actions">
          <button type="button" onClick={() => copyText(msg.content || '')} title="Copy the message">Copy</button>
          {role === 'user' && <button type="button" data-testid="edit" disabled={busy} onClick={() => setEditing(true)}>Edit</button>}
          {role === 'assistant' && <button type="button" data-testid="regenerate" disabled={busy} onClick={onRegenerate}>Regenerate</button>}
          {msg.aborted && <span class="note">stopped</span>}
          {msg.timings && <span class="note" data-testid="msg-speed">{msg.timings.predicted_n} tokens · {msg.timings.predicted_per_second?.toFixed(1)} t/s</span>}
        </div>
      )}
    </div>
  );
}
