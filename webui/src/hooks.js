// Hooks: a localStorage-backed state, and the server's props/slots/metrics
// polled while someone looks at them.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { AuthError } from './api.js';

export function usePersistent(key, initial) {
  const [value, setValue] = useState(() => {
    try {
      const s = localStorage.getItem(key);
      return s === null ? initial : JSON.parse(s);
    } catch {
      return initial;
    }
  });
  const set = useCallback((v) => {
    setValue(v);
    try {
      localStorage.setItem(key, JSON.stringify(v));
    } catch {
      /* storage full or disabled: the value lives for this page only */
    }
  }, [key]);
  return [value, set];
}

const POLL_MS = 2000;

export function useServerState(api, polling, onAuth) {
  const [state, setState] = useState({ props: null, slots: [], metrics: null, error: '' });
  const inFlight = useRef(false);
  const refresh = useCallback(async () => {
    if (inFlight.current) return;
    inFlight.current = true;
    try {
      const [props, slots, metrics] = await Promise.all([api.props(), api.slots(), api.metrics().catch(() => null)]);
      setState({ props, slots, metrics, error: '' });
    } catch (e) {
      if (e instanceof AuthError) onAuth(e);
      setState((s) => ({ ...s, error: e.message }));
    } finally {
      inFlight.current = false;
    }
  }, [api, onAuth]);
  useEffect(() => {
    refresh();
  }, []);
  // Until /props has answered once (the model may still be loading: 503),
  // keep asking even when nobody looks at the panel.
  const active = polling || !state.props;
  useEffect(() => {
    if (!active) return undefined;
    const t = setInterval(refresh, POLL_MS);
    return () => clearInterval(t);
  }, [active, refresh]);
  return { ...state, refresh };
}
