"""Independent NumPy implementation of OSCAR calibration as docs/OSCAR.md
(§5, "Calibration") defines it, for the C++ tests. Run with Debian's python3.

  calib_ref.py IN OUT
IN (little-endian): int32 n, n_head, n_head_kv, d; then float32 q (n, n_head*d),
k (n, n_head_kv*d), v (n, n_head_kv*d). OUT: float64 C_K (d*d), C_V (d*d),
eigenvalues of C_K then C_V (ascending, d each), M_K, M_V (d*d, row-major).
Eigenvector signs: the largest-magnitude entry of each column is positive
(the C++ side's convention), so M is unique for distinct eigenvalues.
"""
import sys

import numpy as np


def hadamard(d):
    # Sylvester's recursion, normalised: a different construction from the
    # C++ side's popcount formula.
    h = np.ones((1, 1))
    while h.shape[0] < d:
        h = np.block([[h, h], [h, -h]])
    return h / np.sqrt(d)


def bitrev(i, bits):
    return int(format(i, "0%db" % bits)[::-1], 2) if bits else 0


def pbr(ev):
    d = len(ev)
    bits = d.bit_length() - 1
    order = sorted(range(d), key=lambda j: (-ev[j], j))  # s(i): i-th largest
    p = np.zeros((d, d))
    for i in range(d):
        p[:, bitrev(i, bits)] = np.eye(d)[order[i]]  # column br(i) = e_s(i)
    return p


def rotation(c):
    ev, r = np.linalg.eigh(c)
    for j in range(r.shape[1]):
        if r[np.argmax(np.abs(r[:, j])), j] < 0:
            r[:, j] = -r[:, j]
    return ev, r @ hadamard(len(ev)) @ pbr(ev)


def main(inp, out):
    raw = open(inp, "rb").read()
    n, nh, nkv, d = np.frombuffer(raw[:16], dtype="<i4")
    f = np.frombuffer(raw[16:], dtype="<f4").astype(np.float64)
    q = f[: n * nh * d].reshape(n, nh, d)
    k = f[n * nh * d : n * nh * d + n * nkv * d].reshape(n, nkv, d)
    v = f[n * nh * d + n * nkv * d :].reshape(n, nkv, d)
    g = nh // nkv
    ck = np.zeros((d, d))
    cv = np.zeros((d, d))
    for h in range(nkv):
        qg = q[:, h * g : (h + 1) * g, :].reshape(-1, d)
        ch = qg.T @ qg / qg.shape[0]
        ck += ch
        w = np.einsum("ti,ij,tj->t", k[:, h], ch, k[:, h])
        w = w / max(w.sum(), 1e-12) * n  # weights of a head sum to the token count
        cv += (v[:, h] * w[:, None]).T @ v[:, h] / n
    ck /= nkv
    cv /= nkv
    ck = (ck + ck.T) / 2
    cv = (cv + cv.T) / 2
    ev_k, m_k = rotation(ck)
    ev_v, m_v = rotation(cv)
    np.concatenate([ck.ravel(), cv.ravel(), ev_k, ev_v, m_k.ravel(), m_v.ravel()]).astype("<f8").tofile(out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
