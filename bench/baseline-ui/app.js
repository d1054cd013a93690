// The svc browser console: one ES module, no framework, no build step.
//
// Views (hash routing, so the server only serves `/` and `/ui/*`):
//   sign-in                       whenever GET /api/me answers 401
//   #/                            who is signed in, their groups, platform roles and workspaces
//   #/groups                      control-plane Groups screen (platform_admin): grant/revoke platform_admin
//   #/workspaces/<slug>/members   workspace Members screen (ws_admin or platform_admin)
//
// Every request is same-origin with the session cookie; every state-changing request echoes the
// CSRF cookie in the CSRF header (both names come from GET /api/auth/config). The DOM is built
// with createElement/textContent only (no innerHTML), so names from the identity provider can
// never become markup. The page runs under a strict CSP: no inline scripts, styles or handlers.

const ROLES = ['ws_admin', 'ws_editor', 'ws_viewer'];
const ROLE_HELP = {
  ws_admin: 'manages the workspace and its members',
  ws_editor: 'creates and changes the workspace’s content',
  ws_viewer: 'reads the workspace’s content',
};

const state = { config: null, me: null, renderSeq: 0 };

// ---------------------------------------------------------------------------------------------
// DOM helpers

/** h('button', { class: 'primary', onclick: fn }, 'Text', child, ...) */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'value') el.value = v;
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const byId = (id) => document.getElementById(id);

function setView(...nodes) {
  const view = byId('view');
  view.replaceChildren(...nodes.filter((n) => n !== null && n !== undefined && n !== false));
  return view;
}

/** Moves keyboard and screen-reader focus to the view's heading after a navigation. */
function focusHeading() {
  const h1 = byId('view').querySelector('h1');
  if (h1) { h1.setAttribute('tabindex', '-1'); h1.focus({ preventScroll: false }); }
}

// Outcomes go to the polite status region, errors to the assertive alert region.
function clearMessages() {
  for (const el of [byId('status'), byId('alert'), ...document.querySelectorAll('.form-error')]) {
    el.textContent = ''; el.classList.remove('visible');
  }
}

/** An empty alert region inside a form, filled by warn(text, form). */
const formError = () => h('p', { class: 'message error form-error', role: 'alert', 'aria-live': 'assertive', 'aria-atomic': 'true' });
function say(text) {
  const el = byId('status');
  byId('alert').textContent = ''; byId('alert').classList.remove('visible');
  el.textContent = text; el.classList.add('visible');
}
/** Shows an error; with a form, in that form's own alert region, next to the fields. */
function warn(text, form) {
  const local = form?.querySelector('.form-error');
  if (local) {
    byId('status').textContent = ''; byId('status').classList.remove('visible');
    local.textContent = text; local.classList.add('visible');
    return;
  }
  const el = byId('alert');
  byId('status').textContent = ''; byId('status').classList.remove('visible');
  el.textContent = text; el.classList.add('visible');
}

function badge(idpManaged) {
  return idpManaged
    ? h('span', { class: 'badge idp', title: 'from the identity provider’s groups claim' }, 'identity provider')
    : h('span', { class: 'badge local', title: 'managed in svc' }, 'local');
}

function when(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
}

/** Disables a button (and marks its form busy) while a request runs. */
async function busy(button, fn) {
  const form = button.form;
  button.disabled = true;
  if (form) form.setAttribute('aria-busy', 'true');
  try { return await fn(); } finally {
    button.disabled = false;
    if (form) form.removeAttribute('aria-busy');
  }
}

// ---------------------------------------------------------------------------------------------
// API

class ApiError extends Error {
  constructor(status, code, message) { super(message); this.status = status; this.code = code; }
}

function readCookie(name) {
  for (const part of document.cookie.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) {
      try { return decodeURIComponent(part.slice(eq + 1).trim()); } catch { return part.slice(eq + 1).trim(); }
    }
  }
  return null;
}

async function api(method, url, body) {
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && method !== 'HEAD' && state.config) {
    const token = readCookie(state.config.csrf_cookie);
    if (token) headers[state.config.csrf_header] = token;
  }
  let res;
  try {
    res = await fetch(url, {
      method, headers, credentials: 'same-origin', cache: 'no-store',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'network', 'The server cannot be reached. Check your connection and try again.');
  }
  const text = res.status === 204 ? '' : await res.text();
  let data = null;
  if (text) { try { data = JSON.parse(text); } catch { data = null; } }
  if (!res.ok) {
    const message = data && typeof data.message === 'string' ? data.message : `request failed with status ${res.status}`;
    throw new ApiError(res.status, data?.error ?? 'error', message);
  }
  return data;
}

/** Sentence case for API messages, which are lower-case sentences without a final stop. */
function sentence(message) {
  const s = String(message ?? '').trim();
  if (!s) return 'Something went wrong.';
  const first = s.charAt(0).toUpperCase() + s.slice(1);
  return /[.!?]$/.test(first) ? first : `${first}.`;
}

/** Reports a failed request; a 401 means the session ended, so the sign-in view comes back. */
function fail(err, form) {
  if (err instanceof ApiError && err.status === 401) {
    state.me = null;
    showSignIn('Your session has ended. Sign in again.');
    return;
  }
  warn(sentence(err instanceof Error ? err.message : String(err)), form);
}

// ---------------------------------------------------------------------------------------------
// Router

function currentRoute() {
  const hash = location.hash.startsWith('#/') ? location.hash.slice(1) : '/';
  const path = hash.split('?')[0];
  if (path === '/' || path === '') return { name: 'home' };
  if (path === '/groups') return { name: 'groups' };
  const m = path.match(/^\/workspaces\/([^/]+)\/members\/?$/);
  if (m) {
    let slug;
    try { slug = decodeURIComponent(m[1]); } catch { slug = m[1]; }
    return { name: 'members', ws: slug };
  }
  return { name: 'notfound', path };
}

const membersHref = (slug) => `#/workspaces/${encodeURIComponent(slug)}/members`;
const isPlatformAdmin = () => !!state.me?.platform_roles?.includes('platform_admin');

async function render(opts = {}) {
  const seq = ++state.renderSeq;
  if (!opts.keepMessages) clearMessages();
  try {
    state.config ??= await api('GET', '/api/auth/config');
  } catch (err) {
    setView(h('h1', null, 'svc'));
    warn(`The sign-in configuration cannot be loaded: ${sentence(err.message)}`);
    return;
  }
  let me;
  try {
    me = await api('GET', '/api/me');
  } catch (err) {
    if (seq !== state.renderSeq) return;
    if (err instanceof ApiError && err.status === 401) { state.me = null; showSignIn(); return; }
    setView(h('h1', null, 'svc'));
    warn(sentence(err.message));
    return;
  }
  if (seq !== state.renderSeq) return;
  state.me = me;
  renderChrome();
  const route = currentRoute();
  document.body.classList.remove('signed-out');
  try {
    if (route.name === 'home') await showHome(seq);
    else if (route.name === 'groups') await showGroups(seq);
    else if (route.name === 'members') await showMembers(seq, route.ws);
    else showNotFound(route.path);
  } catch (err) {
    if (seq === state.renderSeq) fail(err);
  }
  if (opts.focus && seq === state.renderSeq) focusHeading();
}

function renderChrome() {
  const route = currentRoute();
  const link = (href, text, active) => h('a', { href, 'aria-current': active ? 'page' : null }, text);
  const nav = byId('nav');
  nav.replaceChildren(h('ul', null,
    h('li', null, link('#/', 'Home', route.name === 'home')),
    isPlatformAdmin() ? h('li', null, link('#/groups', 'Groups', route.name === 'groups')) : null,
  ));
  const who = state.me.user.name || state.me.user.email;
  byId('session').replaceChildren(
    h('span', { class: 'who', title: state.me.user.email }, who),
    h('button', { type: 'button', class: 'secondary small', id: 'sign-out', onclick: signOut }, 'Sign out'),
  );
  byId('topbar').hidden = false;
}

async function signOut(ev) {
  const button = ev.currentTarget;
  try {
    await busy(button, () => api('POST', '/api/auth/logout'));
  } catch (err) {
    // Already signed out elsewhere (401): the outcome is the same.
    if (!(err instanceof ApiError && err.status === 401)) { warn(`Signing out failed: ${sentence(err.message)}`); return; }
  }
  state.me = null;
  if (location.hash && location.hash !== '#/') history.replaceState(null, '', '#/');
  showSignIn();
  say('You have signed out.');
}

// ---------------------------------------------------------------------------------------------
// Sign-in view

/** The SSO login URL; a deep link (#/groups, ...) is kept through the provider round trip. */
function ssoHref(loginUrl) {
  const u = new URL(loginUrl, location.origin);
  if (u.origin !== location.origin) return loginUrl;
  if (location.hash.startsWith('#/') && location.hash.length > 2) u.searchParams.set('return_to', `/${location.hash}`);
  return u.pathname + u.search;
}

function showSignIn(notice) {
  state.renderSeq++;
  const cfg = state.config;
  byId('topbar').hidden = true;
  byId('nav').replaceChildren();
  byId('session').replaceChildren();
  document.body.classList.add('signed-out');
  document.title = 'Sign in · svc';

  const error = (text) => { warn(text); };
  const email = h('input', { id: 'email', name: 'email', type: 'email', autocomplete: 'username', required: true, maxlength: 320, spellcheck: 'false' });
  const password = h('input', { id: 'password', name: 'password', type: 'password', autocomplete: 'current-password', required: true, maxlength: 1024 });
  const submit = h('button', { type: 'submit', class: cfg.sso ? 'secondary' : 'primary' }, 'Sign in');
  const form = h('form', { id: 'local-form', class: 'stack', 'aria-label': 'Local sign-in', hidden: cfg.sso },
    h('div', { class: 'field' }, h('label', { for: 'email' }, 'Email'), email),
    h('div', { class: 'field' }, h('label', { for: 'password' }, 'Password'), password),
    submit,
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearMessages();
    try {
      await busy(submit, () => api('POST', '/api/auth/login', { email: email.value.trim(), password: password.value }));
    } catch (err) {
      password.value = '';
      password.setAttribute('aria-invalid', 'true');
      error(sentence(err.message));
      password.focus();
      return;
    }
    password.value = '';
    await render({ focus: true });
  });

  const children = [h('h1', null, 'Sign in to svc')];
  if (cfg.sso) {
    const reveal = h('button', { type: 'button', class: 'link', id: 'break-glass', 'aria-expanded': 'false', 'aria-controls': 'local-form' }, 'Break-glass sign-in');
    reveal.addEventListener('click', () => {
      const open = form.hidden;
      form.hidden = !open;
      reveal.setAttribute('aria-expanded', String(open));
      if (open) email.focus();
    });
    children.push(
      h('p', { class: 'lead' }, 'Use your organisation’s account.'),
      h('a', { class: 'button primary block', href: ssoHref(cfg.sso_login_url), id: 'sso-login' }, 'Sign in with single sign-on'),
      h('div', { class: 'break-glass' },
        reveal,
        h('p', { class: 'hint' }, 'For the local administrator, when single sign-on is unavailable.'),
        form,
      ),
    );
  } else {
    children.push(h('p', { class: 'lead' }, 'Sign in with your email and password.'), form);
  }
  setView(h('section', { class: 'card signin', 'aria-labelledby': 'signin-title' }, ...children));
  byId('view').querySelector('h1').id = 'signin-title';
  if (notice) warn(notice);
  if (!cfg.sso) email.focus();
}

// ---------------------------------------------------------------------------------------------
// Home

async function showHome(seq) {
  const me = state.me;
  document.title = 'Home · svc';
  let others = [];
  if (isPlatformAdmin()) {
    try {
      const all = await api('GET', '/api/workspaces');
      const mine = new Set(me.workspaces.map((w) => w.slug));
      others = all.workspaces.filter((w) => !mine.has(w.slug));
    } catch { others = []; }
  }
  if (seq !== state.renderSeq) return;
  const name = me.user.name || me.user.email;
  const canManage = (role) => role === 'ws_admin' || isPlatformAdmin();

  const workspaces = me.workspaces.length === 0
    ? h('p', { class: 'empty', id: 'no-workspaces' }, 'You have no workspaces yet. Access comes from roles granted to your groups: ask a workspace administrator to add one of them.')
    : table('Your workspaces', ['Workspace', 'Slug', 'Your role', 'Members'], me.workspaces.map((w) => [
      w.name, h('code', null, w.slug), h('span', { class: `role ${w.role}` }, w.role),
      canManage(w.role) ? h('a', { href: membersHref(w.slug), 'aria-label': `Members of ${w.name}` }, 'Manage members') : h('span', { class: 'muted' }, '—'),
    ]), { id: 'workspaces' });

  setView(
    h('h1', null, 'Signed in as ', h('span', { class: 'name', id: 'signed-in-as' }, name)),
    me.user.name ? h('p', { class: 'lead' }, me.user.email) : null,
    h('div', { class: 'grid' },
      h('section', { class: 'card', 'aria-labelledby': 'h-groups' },
        h('h2', { id: 'h-groups' }, 'Your groups'),
        me.groups.length === 0
          ? h('p', { class: 'empty' }, 'You are in no groups.')
          : h('ul', { class: 'plain', id: 'my-groups' }, me.groups.map((g) => h('li', null, h('span', { class: 'group' }, g.name), ' ', badge(g.idp_managed)))),
      ),
      h('section', { class: 'card', 'aria-labelledby': 'h-platform' },
        h('h2', { id: 'h-platform' }, 'Platform roles'),
        me.platform_roles.length === 0
          ? h('p', { class: 'empty', id: 'platform-roles' }, 'None.')
          : h('ul', { class: 'plain', id: 'platform-roles' }, me.platform_roles.map((r) => h('li', null, h('span', { class: 'role platform_admin' }, r)))),
      ),
    ),
    h('section', { 'aria-labelledby': 'h-workspaces' },
      h('h2', { id: 'h-workspaces' }, 'Workspaces'),
      workspaces,
    ),
    others.length === 0 ? null : h('section', { 'aria-labelledby': 'h-other-ws' },
      h('h2', { id: 'h-other-ws' }, 'Other workspaces'),
      h('p', { class: 'hint' }, 'You have no role here, but as platform_admin you can manage their members.'),
      table('Other workspaces', ['Workspace', 'Slug', 'Members'], others.map((w) => [
        w.name, h('code', null, w.slug), h('a', { href: membersHref(w.slug), 'aria-label': `Members of ${w.name}` }, 'Manage members'),
      ])),
    ),
  );
}

/** A table with a caption for screen readers and header cells with scope. */
function table(caption, headers, rows, attrs = {}) {
  return h('div', { class: 'table-wrap' },
    h('table', attrs,
      h('caption', { class: 'visually-hidden' }, caption),
      h('thead', null, h('tr', null, headers.map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', null, rows.map((cells) => (cells instanceof Node ? cells
        : h('tr', null, cells.map((c, i) => (i === 0 ? h('th', { scope: 'row' }, c) : h('td', null, c))))))),
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// Groups screen (platform_admin)

async function showGroups(seq, focusId) {
  document.title = 'Groups · svc';
  if (!isPlatformAdmin()) {
    setView(h('h1', null, 'Groups'), h('p', null, 'This screen needs the platform_admin role.'));
    warn('You do not have access to the Groups screen.');
    return;
  }
  const { groups } = await api('GET', '/api/groups');
  if (seq !== state.renderSeq) return;

  const rows = groups.map((g) => {
    const admin = g.platform_roles.includes('platform_admin');
    const action = admin
      ? h('button', { type: 'button', class: 'danger small', id: `revoke-pa-${g.id}`, 'aria-label': `Revoke platform_admin from ${g.name}`, onclick: (ev) => changePlatformRole(ev, g, false) }, 'Revoke')
      : h('button', { type: 'button', class: 'secondary small', id: `grant-pa-${g.id}`, 'aria-label': `Grant platform_admin to ${g.name}`, onclick: (ev) => changePlatformRole(ev, g, true) }, 'Grant');
    return h('tr', { 'data-group': g.name },
      h('th', { scope: 'row' }, g.name),
      h('td', null, badge(g.idp_managed)),
      h('td', { class: 'num' }, String(g.members)),
      h('td', null, admin ? h('span', { class: 'yes' }, 'yes') : h('span', { class: 'no' }, 'no')),
      h('td', { class: 'actions' }, action),
    );
  });

  const nameInput = h('input', { id: 'grant-group-name', name: 'group', required: true, maxlength: 255, autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'grant-group-hint' });
  const confirmBox = h('input', { id: 'grant-confirm', name: 'confirm', type: 'checkbox', required: true });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Grant platform_admin');
  const form = h('form', { id: 'grant-form', class: 'stack card' },
    formError(),
    h('div', { class: 'field' },
      h('label', { for: 'grant-group-name' }, 'Group name'),
      nameInput,
      h('p', { class: 'hint', id: 'grant-group-hint' }, 'Exactly as in the identity provider’s groups claim, without a path prefix.'),
    ),
    h('div', { class: 'check' },
      confirmBox,
      h('label', { for: 'grant-confirm' }, 'I confirm that my organisation controls this group, and that every member of it may administer the whole platform.'),
    ),
    submit,
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const name = nameInput.value.trim();
    clearMessages();
    if (!name) { warn('Enter a group name.', form); nameInput.focus(); return; }
    if (!confirmBox.checked) { warn('Tick the confirmation to grant platform_admin.', form); confirmBox.focus(); return; }
    try {
      const r = await busy(submit, () => api('PUT', `/api/groups/${encodeURIComponent(name)}/platform-role`));
      await refreshMe();
      await showGroups(state.renderSeq, 'grant-group-name');
      say(r.changed ? `Granted platform_admin to group ${name}.` : `Group ${name} already had platform_admin.`);
    } catch (err) { fail(err, form); }
  });

  setView(
    h('h1', null, 'Groups'),
    h('p', { class: 'lead' }, 'Groups come from the identity provider’s groups claim or are local to svc. Members of a group with platform_admin administer the whole platform: users, groups and every workspace.'),
    groups.length === 0
      ? h('p', { class: 'empty' }, 'There are no groups yet.')
      : table('Groups and their platform role', ['Group', 'Source', 'Members', 'platform_admin', 'Action'], rows, { id: 'groups-table' }),
    h('section', { 'aria-labelledby': 'h-grant' },
      h('h2', { id: 'h-grant' }, 'Grant platform_admin to an identity-provider group'),
      h('p', { class: 'hint' }, 'Grant roles only to group names your organisation controls: a name the provider invents becomes a group here.'),
      form,
    ),
  );
  if (focusId) byId(focusId)?.focus();
}

async function changePlatformRole(ev, group, grant) {
  const button = ev.currentTarget;
  if (!grant && !window.confirm(`Revoke platform_admin from group ${group.name}? Its members will no longer administer the platform.`)) return;
  try {
    const r = await busy(button, () => api(grant ? 'PUT' : 'DELETE', `/api/groups/${encodeURIComponent(group.id)}/platform-role`));
    await refreshMe();
    if (!isPlatformAdmin()) { location.hash = '#/'; await render(); say(`Revoked platform_admin from group ${group.name}; you no longer have it.`); return; }
    await showGroups(state.renderSeq, `${grant ? 'revoke' : 'grant'}-pa-${group.id}`);
    say(grant
      ? (r.changed ? `Granted platform_admin to group ${group.name}.` : `Group ${group.name} already had platform_admin.`)
      : (r.changed ? `Revoked platform_admin from group ${group.name}.` : `Group ${group.name} did not have platform_admin.`));
  } catch (err) { fail(err); }
}

async function refreshMe() {
  state.me = await api('GET', '/api/me');
  renderChrome();
}

// ---------------------------------------------------------------------------------------------
// Members screen (ws_admin of the workspace, or platform_admin)

async function showMembers(seq, slug, focusId) {
  document.title = `Members of ${slug} · svc`;
  let ws, members;
  try {
    [ws, members] = await Promise.all([
      api('GET', `/api/workspaces/${encodeURIComponent(slug)}`),
      api('GET', `/api/workspaces/${encodeURIComponent(slug)}/members`),
    ]);
  } catch (err) {
    if (seq !== state.renderSeq) return;
    if (err instanceof ApiError && (err.status === 403 || err.status === 404)) {
      setView(h('h1', null, 'Members'), h('p', null, h('a', { href: '#/' }, 'Back to your workspaces')));
      warn(err.status === 403 ? `You cannot manage the members of workspace ${slug}: ${sentence(err.message)}` : sentence(err.message));
      return;
    }
    throw err;
  }
  if (seq !== state.renderSeq) return;

  const roleSelect = (id, value, label) => h('select', { id, 'aria-label': label },
    ROLES.map((r) => h('option', { value: r, selected: r === value }, r)));

  const rows = members.groups.map((g) => {
    const sel = roleSelect(`role-${g.id}`, g.role, `Role of ${g.name}`);
    const save = h('button', { type: 'button', class: 'secondary small', id: `save-${g.id}`, 'aria-label': `Save role of ${g.name}` }, 'Save');
    const revoke = h('button', { type: 'button', class: 'danger small', id: `revoke-${g.id}`, 'aria-label': `Revoke ${g.name}` }, 'Revoke');
    save.addEventListener('click', () => setGroupRole(save, slug, g.id, g.name, sel.value, `save-${g.id}`));
    revoke.addEventListener('click', () => revokeGroup(revoke, slug, g));
    return h('tr', { 'data-group': g.name },
      h('th', { scope: 'row' }, g.name),
      h('td', null, badge(g.idp_managed)),
      h('td', null, sel),
      h('td', { class: 'muted' }, g.granted_by ?? '—', h('br'), h('small', null, when(g.granted_at))),
      h('td', { class: 'actions' }, save, revoke),
    );
  });

  const nameInput = h('input', { id: 'add-group-name', name: 'group', required: true, maxlength: 255, autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'add-group-hint' });
  const addRole = roleSelect('add-group-role', 'ws_viewer', null);
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Add group');
  const form = h('form', { id: 'add-group-form', class: 'card' },
    formError(),
    h('div', { class: 'row' },
      h('div', { class: 'field grow' }, h('label', { for: 'add-group-name' }, 'Group name'), nameInput),
      h('div', { class: 'field' }, h('label', { for: 'add-group-role' }, 'Role'), addRole),
      submit,
    ),
    h('p', { class: 'hint', id: 'add-group-hint' }, 'The name exactly as in the identity provider’s groups claim, for example analysts. A name not seen yet becomes an identity-provider group.'),
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const name = nameInput.value.trim();
    clearMessages();
    if (!name) { warn('Enter a group name.', form); nameInput.focus(); return; }
    await setGroupRole(submit, slug, name, name, addRole.value, 'add-group-name', form);
  });

  setView(
    h('p', { class: 'crumbs' }, h('a', { href: '#/' }, 'Home'), ' / ', ws.name),
    h('h1', null, 'Members of ', h('span', { class: 'name' }, ws.name)),
    h('p', { class: 'lead' }, 'People get access to workspace ', h('code', null, ws.slug), ' through the roles of their groups. ',
      ROLES.map((r, i) => [h('strong', null, r), ` ${ROLE_HELP[r]}`, i < ROLES.length - 1 ? '; ' : '.'])),
    h('section', { 'aria-labelledby': 'h-members' },
      h('h2', { id: 'h-members' }, 'Groups'),
      members.groups.length === 0
        ? h('p', { class: 'empty' }, 'No group has a role in this workspace yet.')
        : table(`Groups with a role in ${ws.name}`, ['Group', 'Source', 'Role', 'Granted by', 'Actions'], rows, { id: 'members-table' }),
    ),
    h('section', { 'aria-labelledby': 'h-add' },
      h('h2', { id: 'h-add' }, 'Add a group'),
      form,
    ),
    members.users.length === 0 ? null : h('section', { 'aria-labelledby': 'h-users' },
      h('h2', { id: 'h-users' }, 'People with a direct role'),
      h('p', { class: 'hint' }, 'Set by svc init for the break-glass administrator; not changed here.'),
      table(`People with a direct role in ${ws.name}`, ['Email', 'Role', 'Granted'], members.users.map((u) => [
        u.email, h('span', { class: `role ${u.role}` }, u.role), when(u.granted_at),
      ])),
    ),
  );
  if (focusId) byId(focusId)?.focus();
}

async function setGroupRole(button, slug, ref, name, role, focusId, form) {
  try {
    const r = await busy(button, () => api('PUT', `/api/workspaces/${encodeURIComponent(slug)}/members/groups/${encodeURIComponent(ref)}`, { role }));
    await refreshMe();
    await showMembers(state.renderSeq, slug, focusId);
    say(r.change === 'created' ? `Added group ${name} to ${slug} as ${role}.`
      : r.change === 'updated' ? `Group ${name} now has ${role} in ${slug}.`
      : `Group ${name} already had ${role} in ${slug}.`);
  } catch (err) { fail(err, form); }
}

async function revokeGroup(button, slug, group) {
  if (!window.confirm(`Revoke the role of group ${group.name} in ${slug}? Its members lose the access it gave them.`)) return;
  try {
    const r = await busy(button, () => api('DELETE', `/api/workspaces/${encodeURIComponent(slug)}/members/groups/${encodeURIComponent(group.id)}`));
    await refreshMe();
    await showMembers(state.renderSeq, slug, 'add-group-name');
    say(r.changed ? `Revoked the role of group ${group.name} in ${slug}.` : `Group ${group.name} had no role in ${slug}.`);
  } catch (err) { fail(err); }
}

function showNotFound(path) {
  document.title = 'Not found · svc';
  setView(h('h1', null, 'Page not found'), h('p', null, 'There is no page at ', h('code', null, path), '. ', h('a', { href: '#/' }, 'Go home')));
}

// ---------------------------------------------------------------------------------------------
// Start

window.addEventListener('hashchange', () => {
  // `#main` (the skip link) and other in-page anchors are not routes.
  if (!location.hash.startsWith('#/') && location.hash !== '') return;
  render({ focus: true });
});

byId('skip-link').addEventListener('click', (ev) => {
  ev.preventDefault();
  const h1 = byId('view').querySelector('h1');
  (h1 ?? byId('main')).focus();
});

render();
