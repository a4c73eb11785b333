// Starts a long stream, says STARTED after its first token (the test then
// sends SIGTERM to the server), and checks the stream still completes.
import { client } from './common.mjs';

const oa = client();
const stream = await oa.completions.create({
  model: 'x', prompt: 'go', max_tokens: 300, ignore_eos: true, stream: true, temperature: 0,
});
let started = false;
let finish = null;
let n = 0;
for await (const c of stream) {
  n++;
  if (!started) {
    started = true;
    console.log('STARTED');
  }
  if (c.choices[0]?.finish_reason) finish = c.choices[0].finish_reason;
}
console.log(`COMPLETE finish=${finish} chunks=${n}`);
// New requests after the signal are refused (or the port is already closed).
try {
  const r = await fetch(process.env.OSCAR_URL + '/v1/completions', {
    method: 'POST', body: JSON.stringify({ prompt: 'x', max_tokens: 1 }),
  });
  console.log(`AFTER status=${r.status}`);
} catch (e) {
  console.log('AFTER refused');
}
