// chatpipe's built-in chat page: sessions, the question box, the live
// answer (answer.js), Stop, and the knowledge base. It uses the public
// HTTP API only (api.js).
(function () {
  'use strict';

  var C = window.Chatpipe;
  var SESSION_STORE = 'chatpipe.session';

  var state = {
    sessions: [],
    session: null, // the open session's id; null = a new chat not yet created
    modes: [],
    models: [], // the models that may answer side by side
    defaultMode: '',
    live: null, // {view, ctrl}: the answer whose stream this page reads
    creating: false, // a new chat is being created for the question
    opening: 0 // guards openSession against a later click
  };

  function $(id) { return document.getElementById(id); }
  var el = C.el;

  // attach makes view the live answer and reads its stream: from resp
  // (with the ctrl that made it), or by resuming after the view's seq.
  function attach(view, resp, ctrl) {
    if (!ctrl) {
      detachLive();
      ctrl = new AbortController();
      state.live = { view: view, ctrl: ctrl };
      updateComposer();
    }
    C.follow(view, resp, ctrl.signal).then(function () {
      if (state.live && state.live.view === view) {
        state.live = null;
        updateComposer();
        if (view.done && view.onDone) view.onDone(view);
      }
    });
  }

  // detachLive stops reading the live stream (the answer goes on being
  // generated and saved on the server).
  function detachLive() {
    if (!state.live) return;
    state.live.view.saveSnapshot();
    state.live.ctrl.abort();
    state.live = null;
    updateComposer();
  }

  // ---- The page ----

  var ui = {};

  function showBanner(msg) {
    ui.banner.textContent = msg;
    ui.banner.hidden = !msg;
  }

  function askForKey(msg) {
    showBanner(msg + ' Enter your API key under "API key" in the side panel.');
    $('key-box').open = true;
  }

  function updateComposer() {
    var live = state.live && !state.live.view.done;
    ui.send.hidden = !!live;
    ui.stop.hidden = !live;
    ui.stop.disabled = false;
  }

  function scrollToEnd() {
    var m = ui.messages;
    if (m.scrollHeight - m.scrollTop - m.clientHeight < 160) m.scrollTop = m.scrollHeight;
  }

  function clearMessages() {
    ui.messages.textContent = '';
    ui.messages.append(ui.empty);
    ui.empty.hidden = false;
  }

  // addUser shows a question: its text, or the saved message (m).
  function addUser(m) {
    if (typeof m === 'string') m = { content: m };
    ui.empty.hidden = true;
    var a = el('article', 'msg user');
    if (m.id) a.dataset.id = m.id;
    a.append(el('div', 'bubble', m.content));
    if (C.onUserShown) C.onUserShown(a, m);
    ui.messages.append(a);
    return a;
  }

  function addAnswer(view) {
    ui.empty.hidden = true;
    ui.messages.append(view.el);
  }

  function renderSessions() {
    ui.sessions.textContent = '';
    state.sessions.forEach(function (s) {
      var row = el('div', 'session' + (s.id === state.session ? ' active' : ''));
      row.dataset.id = s.id;
      var open = el('button', 'open', s.title);
      open.type = 'button';
      open.title = s.title;
      open.addEventListener('click', function () { openSession(s.id); closeMenu(); });
      var del = el('button', 'del', '×');
      del.type = 'button';
      del.title = 'Delete this chat';
      del.setAttribute('aria-label', 'Delete chat ' + s.title);
      del.addEventListener('click', async function () {
        if (await C.confirmDialog('Delete “' + s.title + '”? Its messages are deleted too; this cannot be undone.', 'Delete')) deleteSession(s.id);
      });
      row.append(open, del);
      ui.sessions.append(row);
    });
  }

  function setTitle(text) {
    ui.title.textContent = text;
    $('rename').hidden = !state.session;
    document.title = text === 'New chat' ? 'chatpipe' : text + ' · chatpipe';
  }

  function setMode(mode) {
    if (mode && state.modes.indexOf(mode) >= 0) ui.mode.value = mode;
  }

  async function loadModes() {
    var data = await C.api('GET', '/api/v1/modes');
    state.modes = data.modes || [];
    state.defaultMode = data.default || state.modes[0] || '';
    ui.mode.textContent = '';
    state.modes.forEach(function (m) {
      var o = el('option', '', m);
      o.value = m;
      ui.mode.append(o);
    });
    setMode(state.defaultMode);
    state.models = data.models || [];
    state.serverTitles = !!data.titles;
    renderCompare();
  }

  // renderCompare offers the models that may answer side by side; with
  // two or more ticked, a question is answered by each of them.
  function renderCompare() {
    var box = $('compare-box');
    var list = $('compare-models');
    list.textContent = '';
    box.hidden = state.models.length < 2;
    state.models.forEach(function (name) {
      var label = el('label', 'compare-model');
      var cb = el('input');
      cb.type = 'checkbox';
      cb.value = name;
      cb.addEventListener('change', updateCompareLabel);
      label.append(cb, document.createTextNode(' ' + name));
      list.append(label);
    });
    updateCompareLabel();
  }

  function comparedModels() {
    return [].slice.call(document.querySelectorAll('#compare-models input:checked')).map(function (cb) { return cb.value; });
  }

  function updateCompareLabel() {
    var n = comparedModels().length;
    $('compare-label').textContent = n >= 2 ? 'Compare ' + n + ' models' : 'Compare models';
  }

  async function loadSessions() {
    var data = await C.api('GET', '/api/v1/sessions?limit=200');
    state.sessions = data.sessions || [];
    renderSessions();
  }

  function showDraft() {
    detachLive();
    state.session = null;
    state.opening++;
    localStorage.removeItem(SESSION_STORE);
    clearMessages();
    setTitle('New chat');
    setMode(state.defaultMode);
    renderSessions();
    ui.question.focus();
  }

  async function openSession(id) {
    detachLive();
    var token = ++state.opening;
    state.session = id;
    localStorage.setItem(SESSION_STORE, id);
    renderSessions();
    var s = state.sessions.find(function (x) { return x.id === id; });
    setTitle(s ? s.title : 'Chat');
    if (s) setMode(s.mode);
    var data;
    try {
      data = await C.api('GET', '/api/v1/sessions/' + encodeURIComponent(id) + '/messages');
    } catch (e) {
      if (token === state.opening) showBanner(e.message);
      return;
    }
    if (token !== state.opening) return; // another session was opened meanwhile
    clearMessages();
    var live = null;
    var msgs = data.messages || [];
    msgs.forEach(function (m) {
      if (m.role === 'user') { addUser(m); return; }
      // Answers given side by side are versions of one answer here
      // (‹ 1/2 ›); while they stream, the stream shows them side by side.
      var view = new C.AnswerView(m.id, id);
      if (m.status === 'streaming') {
        if (!view.restore()) view.render();
        live = view;
      } else {
        view.setSaved(m);
      }
      addAnswer(view);
    });
    ui.messages.scrollTop = ui.messages.scrollHeight;
    if (live) attach(live, null); // continue after the snapshot's seq (or replay all of it)
  }

  async function deleteSession(id) {
    try {
      await C.api('DELETE', '/api/v1/sessions/' + encodeURIComponent(id));
    } catch (e) {
      if (e.status !== 404) { showBanner(e.message); return; }
    }
    state.sessions = state.sessions.filter(function (s) { return s.id !== id; });
    if (state.session === id) showDraft();
    else renderSessions();
  }

  async function ask(text) {
    if (state.live || state.creating) return;
    showBanner('');
    var mode = ui.mode.value || undefined;
    var sessionId = state.session;
    if (!sessionId) {
      // A title given here is the user's, never replaced: when the server
      // titles chats itself, the chat is created untitled.
      var title;
      if (!state.serverTitles) {
        title = text.replace(/\s+/g, ' ').trim();
        if (title.length > 60) title = title.slice(0, 57) + '…';
      }
      var s;
      state.creating = true; // one new chat per question, however fast the clicks
      try {
        s = await C.api('POST', '/api/v1/sessions', { title: title, mode: mode });
      } catch (e) {
        showBanner(e.message);
        return;
      } finally {
        state.creating = false;
      }
      state.sessions.unshift(s);
      state.session = sessionId = s.id;
      state.opening++;
      localStorage.setItem(SESSION_STORE, s.id);
      setTitle(s.title);
      renderSessions();
    }
    var body = { content: text, mode: mode };
    var models = comparedModels();
    if (models.length >= 2) body.models = models;
    $('compare-box').open = false;
    addUser(text);
    await startAnswer('/api/v1/sessions/' + encodeURIComponent(sessionId) + '/messages', body);
  }

  // startAnswer posts a request that answers with a stream (a question, a
  // regenerated answer) and shows that answer live, at the end of the
  // page. It resolves with the view once the stream is being read.
  async function startAnswer(path, body) {
    var sessionId = state.session;
    var view = new C.AnswerView(null, sessionId);
    addAnswer(view);
    ui.messages.scrollTop = ui.messages.scrollHeight;
    var ctrl = new AbortController();
    state.live = { view: view, ctrl: ctrl };
    updateComposer();
    var resp;
    try {
      resp = await fetch(path, {
        method: 'POST',
        headers: C.headers({ 'Content-Type': 'application/json', Accept: 'text/event-stream' }),
        body: JSON.stringify(body),
        signal: ctrl.signal
      });
    } catch (e) {
      if (ctrl.signal.aborted) return view;
      view.done = true;
      view.status = 'failed';
      view.error = 'The question could not be sent; check the connection and try again.';
      view.render();
      state.live = null;
      updateComposer();
      return view;
    }
    if (!resp.ok) {
      var err = await C.errorOf(resp);
      view.done = true;
      view.status = 'failed';
      view.error = err.message;
      view.render();
      state.live = null;
      updateComposer();
      return view;
    }
    view.id = resp.headers.get('X-Message-Id');
    view.saveSnapshot();
    // The page knows the answer from here, even when its first frame is
    // resync_required (the stream's window already passed its first
    // events): the next frames may be none until the saved message ends.
    view.changed();
    attach(view, resp, ctrl);
    return view;
  }

  async function stop() {
    var live = state.live;
    if (!live || !live.view.id) return;
    ui.stop.disabled = true;
    try {
      await C.api('POST', '/api/v1/streams/' + encodeURIComponent(live.view.id) + '/stop');
    } catch (e) {
      showBanner(e.message);
      ui.stop.disabled = false;
    }
    // The stream itself brings stream.finished{"status":"stopped"}.
  }

  // updateSession takes a session as the server now has it (renamed, a
  // generated title) into the list and the top bar.
  function updateSession(s) {
    var known = state.sessions.find(function (x) { return x.id === s.id; });
    if (known) Object.assign(known, s);
    if (s.id === state.session && s.title) setTitle(s.title);
    renderSessions();
  }

  // For conversation.js (regenerate, edit, branches, rename).
  C.app = {
    state: state,
    addUser: addUser,
    startAnswer: startAnswer,
    openSession: openSession,
    updateSession: updateSession,
    showBanner: showBanner,
    mode: function () { return ui.mode.value || undefined; }
  };

  // ---- Knowledge base ----

  // following: the ids of documents being ingested in the background
  // whose progress the page is polling.
  var following = {};

  // ingestFraction is how far a background ingest is, 0..1: reading and
  // parsing pages up to 40 %, embedding up to 95 %, then writing.
  function ingestFraction(p) {
    if (!p) return 0;
    if (p.chunks_written > 0) return 1;
    if (p.chunks_total > 0) return 0.4 + 0.55 * (p.chunks_embedded / p.chunks_total);
    if (p.pages_total > 0) return 0.4 * p.pages_done / p.pages_total;
    return 0.05;
  }

  function ingestDetail(p) {
    if (!p) return 'Waiting…';
    if (p.chunks_total > 0 && p.chunks_embedded > 0) return 'Embedding ' + p.chunks_embedded + '/' + p.chunks_total + ' passages';
    if (p.chunks_total > 0) return p.chunks_total + ' passages';
    if (p.pages_total > 0) return 'Page ' + p.pages_done + '/' + p.pages_total;
    return 'Reading…';
  }

  // docItem renders one document: its title, "shared", and while it is
  // processing a progress bar, or why it failed.
  function docItem(d) {
    var li = el('li', 'doc');
    li.dataset.id = d.id;
    li.dataset.status = d.status || 'ready';
    var row = el('div', 'doc-row');
    var name = el('span', 'doc-title', d.title);
    name.title = d.title + (d.status === 'ready' ? ' · ' + d.chunks + ' passages' : '');
    row.append(name);
    if (d.shared) row.append(el('span', 'badge', 'shared'));
    var del = el('button', 'del', '×');
    del.type = 'button';
    del.title = 'Remove from the knowledge base';
    del.addEventListener('click', async function () {
      try {
        await C.api('DELETE', '/api/v1/knowledge/documents/' + encodeURIComponent(d.id));
        loadDocuments();
      } catch (e) { ui.uploadStatus.textContent = e.message; }
    });
    row.append(del);
    li.append(row);
    if (d.status === 'processing') {
      var bar = el('progress', 'ingest');
      bar.max = 1;
      bar.value = ingestFraction(d.progress);
      bar.title = ingestDetail(d.progress);
      li.append(bar);
    } else if (d.status === 'failed' && d.duplicate_of) {
      li.append(el('p', 'doc-error', 'Already in the knowledge base: ' + (d.error || 'the same text is stored')));
    } else if (d.status === 'failed') {
      li.append(el('p', 'doc-error', 'Failed: ' + (d.error || 'unknown reason')));
    }
    return li;
  }

  async function loadDocuments() {
    var data;
    try {
      data = await C.api('GET', '/api/v1/knowledge/documents?limit=100');
    } catch (e) {
      return;
    }
    ui.documents.textContent = '';
    (data.documents || []).forEach(function (d) {
      ui.documents.append(docItem(d));
      if (d.status === 'processing') follow(d.id, d.title);
    });
    if (!ui.uploadStatus.dataset.keep) ui.uploadStatus.textContent = data.total + ' document' + (data.total === 1 ? '' : 's');
  }

  // follow polls a processing document until it is ready or failed,
  // moving its progress bar, then says how it ended.
  function follow(id, title) {
    if (following[id]) return;
    following[id] = true;
    async function poll() {
      var d;
      try {
        d = await C.api('GET', '/api/v1/knowledge/documents/' + encodeURIComponent(id));
      } catch (e) {
        delete following[id];
        if (e.status !== 404) ui.uploadStatus.textContent = e.message;
        loadDocuments();
        return;
      }
      if (d.status === 'processing') {
        var li = ui.documents.querySelector('li[data-id="' + CSS.escape(id) + '"]');
        var bar = li && li.querySelector('progress');
        if (bar) { bar.value = ingestFraction(d.progress); bar.title = ingestDetail(d.progress); }
        setTimeout(poll, 500);
        return;
      }
      delete following[id];
      ui.uploadStatus.dataset.keep = '1';
      ui.uploadStatus.textContent = d.status === 'ready'
        ? 'Added “' + d.title + '” (' + d.chunks + ' passages).'
        : d.duplicate_of
          ? '“' + (d.title || title) + '” is already in the knowledge base (the same text).'
          : '“' + (d.title || title) + '” failed: ' + (d.error || 'unknown reason');
      loadDocuments();
    }
    setTimeout(poll, 300);
  }

  async function upload(ev) {
    ev.preventDefault();
    var file = ui.file.files[0];
    if (!file) { ui.uploadStatus.textContent = 'Choose a file first.'; return; }
    var form = new FormData();
    form.append('file', file);
    ui.uploadBtn.disabled = true;
    ui.uploadStatus.textContent = 'Uploading…';
    try {
      var resp = await fetch('/api/v1/knowledge/documents', { method: 'POST', headers: C.headers(), body: form });
      if (!resp.ok) throw await C.errorOf(resp);
      var d = await resp.json();
      if (resp.status === 202 || (d.duplicate && d.status === 'processing')) {
        // A new background ingest, or the same file already being ingested.
        ui.uploadStatus.textContent = (d.duplicate ? 'Already being added: “' : 'Ingesting “') + (d.title || file.name) + '”…';
        follow(d.id, d.title || file.name);
      } else {
        ui.uploadStatus.textContent = d.duplicate ? '“' + d.title + '” is already in the knowledge base.'
          : 'Added “' + d.title + '” (' + d.chunks + ' passages).';
      }
      ui.uploadStatus.dataset.keep = '1';
      ui.file.value = '';
      ui.uploadName.textContent = 'Choose a PDF, Word, PowerPoint, Excel, CSV, Markdown, text or HTML file';
      loadDocuments();
    } catch (e) {
      ui.uploadStatus.textContent = e.message;
    } finally {
      ui.uploadBtn.disabled = false;
    }
  }

  // ---- Wiring ----

  function closeMenu() {
    $('app').classList.remove('menu-open');
    ui.scrim.hidden = true;
  }

  function autosize() {
    ui.question.style.height = 'auto';
    ui.question.style.height = Math.min(ui.question.scrollHeight, 200) + 'px';
  }

  async function start() {
    showBanner('');
    try {
      await loadModes();
      await loadSessions();
    } catch (e) {
      if (e.status !== 401) showBanner(e.message || 'The server cannot be reached.');
      return;
    }
    var saved = localStorage.getItem(SESSION_STORE);
    if (saved && state.sessions.some(function (s) { return s.id === saved; })) await openSession(saved);
    else showDraft();
    loadDocuments();
  }

  function init() {
    C.onUnauthorized = askForKey;
    ['banner', 'messages', 'empty', 'sessions', 'send', 'stop', 'question', 'mode', 'title', 'documents', 'scrim']
      .forEach(function (id) { ui[id] = $(id); });
    ui.file = $('upload-file');
    ui.uploadName = $('upload-name');
    ui.uploadBtn = $('upload-btn');
    ui.uploadStatus = $('upload-status');

    $('composer').addEventListener('submit', function (ev) {
      ev.preventDefault();
      var text = ui.question.value;
      if (!text.trim() || state.live || state.creating) return;
      ui.question.value = '';
      autosize();
      ask(text);
    });
    ui.question.addEventListener('keydown', function (ev) {
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        $('composer').requestSubmit();
      }
    });
    ui.question.addEventListener('input', autosize);
    // Esc stops the answer being written, wherever the focus is.
    document.addEventListener('keydown', function (ev) {
      if (ev.key !== 'Escape' || !state.live || state.live.view.done || document.querySelector('dialog[open]')) return;
      ev.preventDefault();
      stop();
    });
    ui.stop.addEventListener('click', stop);
    $('new-chat').addEventListener('click', function () { showDraft(); closeMenu(); });
    $('upload-form').addEventListener('submit', upload);
    ui.file.addEventListener('change', function () {
      ui.uploadName.textContent = ui.file.files[0] ? ui.file.files[0].name : 'Choose a PDF, Word, PowerPoint, Excel, CSV, Markdown, text or HTML file';
    });
    $('key-input').value = C.key;
    $('key-form').addEventListener('submit', function (ev) {
      ev.preventDefault();
      C.key = $('key-input').value.trim();
      if (C.key) localStorage.setItem(C.KEY_STORE, C.key);
      else localStorage.removeItem(C.KEY_STORE);
      $('key-box').open = false;
      start();
    });
    $('menu').addEventListener('click', function () {
      $('app').classList.add('menu-open');
      ui.scrim.hidden = false;
    });
    ui.scrim.addEventListener('click', closeMenu);
    ui.messages.addEventListener('click', function (ev) {
      var a = ev.target.closest('a.cite');
      if (!a) return;
      ev.preventDefault();
      var ref = document.getElementById(a.getAttribute('href').slice(1));
      if (!ref) return;
      ref.querySelector('details').open = true;
      ref.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
      ref.classList.add('flash');
      setTimeout(function () { ref.classList.remove('flash'); }, 1200);
    });
    // Keep the snapshot exact when the page goes away mid-answer.
    window.addEventListener('pagehide', function () { if (state.live) state.live.view.saveSnapshot(); });
    new MutationObserver(scrollToEnd).observe(ui.messages, { childList: true, subtree: true, characterData: true });

    C.cleanSnapshots();
    start();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
