// Starts oscar-server for the browser test on a free port (--port 0; the port
// is read from its log) and stops it; the server never outlives the test.
import { spawn } from 'node:child_process';

export async function startServer(binary, args, env = {}) {
  const child = spawn(binary, [...args, '--host', '127.0.0.1', '--port', '0'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`oscar-server did not become ready:\n${log}`)), 60000);
    const onData = (d) => {
      log += d;
      const m = /server ready on http:\/\/127\.0\.0\.1:(\d+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`oscar-server exited (${code}) during start-up:\n${log}`));
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    log: () => log,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        const hard = setTimeout(() => child.kill('SIGKILL'), 5000);
        child.once('exit', () => {
          clearTimeout(hard);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}
