// The input: Enter sends, Shift+Enter is a new line; text files can be
// attached (button, drop or paste of a file) and travel as context.
import { useRef, useState } from 'preact/hooks';
import { ClipIcon, FileIcon } from './icons.jsx';

const MAX_ATTACHMENT_BYTES = 512 * 1024;

async function readTextFiles(files, onError) {
  const out = [];
  for (const f of files) {
    if (f.size > MAX_ATTACHMENT_BYTES) {
      onError(`${f.name} is larger than ${MAX_ATTACHMENT_BYTES / 1024} KiB`);
      continue;
    }
    const text = await f.text();
    if (text.includes('\u0000')) {
      onError(`${f.name} is not a text file`);
      continue;
    }
    out.push({ name: f.name, text });
  }
  return out;
}

export function Composer({ busy, onSend, onStop, onError }) {
  const [text, setText] = useState('');
  const [attachments, setAttachments] = useState([]);
  const fileRef = useRef(null);

  const add = async (files) => {
    const read = await readTextFiles([...files], onError);
    if (read.length) setAttachments((a) => [...a, ...read]);
  };
  const send = () => {
    if (busy || (!text.trim() && !attachments.length)) return;
    onSend(text, attachments);
    setText('');
    setAttachments([]);
  };

  return (
    <form class="composer" onSubmit={(e) => { e.preventDefault(); send(); }}
      onDragOver={(e) => e.preventDefault()} onDrop={(e) => { e.preventDefault(); add(e.dataTransfer.files); }}>
      {attachments.length > 0 && (
        <div class="attachments">
          {attachments.map((a, i) => (
            <span class="chip" key={i}><FileIcon /> {a.name}
              <button type="button" aria-label={`remove ${a.name}`} onClick={() => setAttachments(attachments.filter((_, j) => j !== i))}>×</button>
            </span>
          ))}
        </div>
      )}
      <div class="composer-row">
        <button type="button" class="icon attach" title="Attach text files" aria-label="attach files" onClick={() => fileRef.current.click()}><ClipIcon /></button>
        <input ref={fileRef} type="file" multiple hidden data-testid="attach-file" onChange={(e) => { add(e.target.files); e.target.value = ''; }} />
        <textarea data-testid="prompt" rows={2} placeholder="Message (Enter sends, Shift+Enter new line)" value={text}
          onInput={(e) => setText(e.target.value)}
          onPaste={(e) => {
            if (e.clipboardData?.files?.length) {
              e.preventDefault();
              add(e.clipboardData.files);
            }
          }}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
              e.preventDefault();
              send();
            }
          }} />
        {busy
          ? <button type="button" class="stop" data-testid="stop" onClick={onStop}>Stop</button>
          : <button type="submit" class="primary" data-testid="send">Send</button>}
      </div>
    </form>
  );
}
