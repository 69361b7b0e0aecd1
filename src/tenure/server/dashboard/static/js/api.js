// The REST API with the signed-in user's bearer token, the server's clock, and problem details.

const TOKEN_KEY = "tenure.token";
// The id of a token this tab got from a sign-in link: Sign out revokes it (a pasted token is
// the user's own, and stays).
const LINKED_KEY = "tenure.linked";

export const session = {
  token: sessionStorage.getItem(TOKEN_KEY),
  me: null,
  save(token) {
    this.token = token;
    sessionStorage.setItem(TOKEN_KEY, token);
  },
  clear() {
    this.token = null;
    this.me = null;
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(LINKED_KEY);
  },
  linked(tokenId) {
    if (tokenId === undefined) return sessionStorage.getItem(LINKED_KEY);
    sessionStorage.setItem(LINKED_KEY, tokenId);
    return tokenId;
  },
  canForce() {
    const roles = this.me?.roles ?? [];
    return roles.includes("admin") || roles.includes("supervisor");
  },
};

// The server's clock, as seen from here: every countdown uses clock.now(), never Date.now().
// A precise sample (the `now` of /v1/stats, in ms) beats the Date header (whole seconds).
export const clock = {
  skew: 0,
  precise: false,
  now() {
    return Date.now() + this.skew;
  },
  sample(serverMs, sentAt, receivedAt, precise) {
    if (!precise && this.precise) return;
    const skew = serverMs - (sentAt + receivedAt) / 2;
    if (!precise && Math.abs(skew - this.skew) < 1500) return; // within the header's resolution
    this.skew = skew;
    this.precise = this.precise || precise;
  },
};

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

let unauthorized = () => {};
export function onUnauthorized(fn) {
  unauthorized = fn;
}

export function authHeaders(extra = {}) {
  return session.token ? { ...extra, Authorization: `Bearer ${session.token}` } : { ...extra };
}

export function networkProblem(err) {
  return {
    code: "unreachable",
    title: "The server cannot be reached",
    detail: String(err?.message || err),
  };
}

export async function api(path, { method = "GET", body, signal, query } = {}) {
  const headers = authHeaders({ Accept: "application/json" });
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const url = query ? `${path}?${params(query)}` : path;
  const sentAt = Date.now();
  let res;
  try {
    res = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      cache: "no-store",
    });
  } catch (err) {
    if (err?.name === "AbortError") throw err;
    throw new ApiError(0, networkProblem(err));
  }
  const receivedAt = Date.now();
  const date = Date.parse(res.headers.get("Date") || "");
  if (!Number.isNaN(date)) clock.sample(date + 500, sentAt, receivedAt, false);
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const problem =
      data && typeof data === "object"
        ? data
        : { title: res.statusText || `HTTP ${res.status}`, detail: text.slice(0, 300) };
    if (res.status === 401 && path !== "/v1/me") unauthorized(problem);
    throw new ApiError(res.status, { status: res.status, ...problem });
  }
  if (data && typeof data.now === "number") clock.sample(data.now, sentAt, receivedAt, true);
  return data;
}

// A query string from an object: empty and null values are left out.
export function params(obj) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(obj)) {
    if (v === undefined || v === null || v === "") continue;
    q.set(k, String(v));
  }
  return q.toString();
}

export const enc = encodeURIComponent;

// The fields of a problem worth showing besides its title and detail, as [name, value] pairs.
const SHOWN = ["field", "key", "holder", "session", "task", "expires_at", "token", "current_token",
  "reason", "actor", "assignee", "lease_state", "op_id", "version", "limit", "size"];
export function problemFields(problem) {
  return SHOWN.filter((k) => problem[k] !== undefined && problem[k] !== null && problem[k] !== "").map((k) => [
    k,
    problem[k],
  ]);
}
