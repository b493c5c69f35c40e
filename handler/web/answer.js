// One assistant answer on the chat page: the state built from its stream
// events, its rendering, and the snapshot that lets a reloaded page
// continue it.
//
// Resume: while an answer streams, the page keeps a snapshot of it (the
// text so far and the seq of the last event it contains) in localStorage.
// After a reload it shows the snapshot and asks the stream for the events
// after that seq; after a dropped connection it does the same from memory.
// Events at or below the seq it has applied are ignored, so no text
// repeats or goes missing. When the replay window is gone
// (resync_required) it shows the saved message instead.
(function (global) {
  'use strict';

  var C = global.Chatpipe;
  var md = global.ChatpipeMarkdown;
  var SNAP_PREFIX = 'chatpipe.stream.';
  var SNAP_MAX_AGE = 24 * 3600 * 1000;

  var STAGE_LABELS = {
    load_history: 'Reading the conversation…',
    rewrite: 'Understanding the question…',
    search: 'Searching the knowledge base…',
    rerank: 'Ranking the passages…',
    merge: 'Selecting the passages…',
    generate: 'Writing the answer…',
    plan: 'Planning the research…', // research mode (research.js)
    research: 'Researching…'
  };

  // Extensions of an answer (tools.js, sidebyside.js, conversation.js …)
  // register hooks here, each optional: build(view) once its elements
  // exist, apply(view, ev) → true when it consumed the event, saved(view,
  // m) when a saved message is shown, render(view) after each render.
  var hooks = C.answerHooks = C.answerHooks || [];
  function runHooks(name, view, arg) {
    for (var i = 0; i < hooks.length; i++) {
      if (hooks[i][name] && hooks[i][name](view, arg) && name === 'apply') return true; // consumed
    }
    return false;
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function AnswerView(id, session) {
    this.id = id;
    this.session = session;
    this.seq = 0;
    this.thinking = '';
    this.answer = '';
    this.refs = [];
    this.rewritten = '';
    this.stage = '';
    this.status = 'streaming';
    this.error = '';
    this.usage = null;
    this.done = false;
    this.reconnecting = false;
    this.thinkingToggled = false;
    this.renderQueued = false;
    this.saveTimer = null;
    this.build();
  }

  AnswerView.prototype.build = function () {
    var self = this;
    this.el = el('article', 'msg assistant');
    this.progressEl = el('div', 'progress');
    this.rewrittenEl = el('div', 'rewritten');
    this.thinkingEl = el('details', 'thinking');
    var summary = el('summary', '', 'Thinking');
    this.thinkingBody = el('div', 'thinking-body');
    this.thinkingEl.append(summary, this.thinkingBody);
    summary.addEventListener('click', function () { self.thinkingToggled = true; });
    this.answerEl = el('div', 'answer');
    this.refsEl = el('section', 'refs');
    this.metaEl = el('div', 'meta');
    this.errorEl = el('div', 'error-text');
    this.el.append(this.progressEl, this.rewrittenEl, this.thinkingEl, this.answerEl, this.errorEl, this.refsEl, this.metaEl);
    runHooks('build', this);
    this.render();
  };

  // apply takes one stream event; events already applied are ignored.
  AnswerView.prototype.apply = function (ev) {
    if (typeof ev.seq === 'number') {
      if (ev.seq <= this.seq) return;
      this.seq = ev.seq;
    }
    // research.js: a subagent's events (they carry an origin) and the plan
    // go to the nested research blocks, never into the answer.
    if ((ev.origin && ev.origin.length) || ev.type === 'research.plan') {
      if (C.ResearchView) (this.research || (this.research = new C.ResearchView(this))).apply(ev);
      this.changed();
      return;
    }
    if (runHooks('apply', this, ev)) { this.changed(); return; }
    switch (ev.type) {
      case 'stage':
        if (ev.status === 'started') this.stage = STAGE_LABELS[ev.name] || ev.name.replace(/_/g, ' ') + '…';
        else if (this.stage === (STAGE_LABELS[ev.name] || ev.name.replace(/_/g, ' ') + '…')) this.stage = '';
        break;
      case 'query.rewritten':
        if (ev.rewritten && ev.rewritten !== ev.original) this.rewritten = ev.rewritten;
        break;
      case 'references':
        this.refs = ev.items || [];
        break;
      case 'thinking.start':
        this.stage = 'Thinking…';
        break;
      case 'thinking.delta':
        this.thinking += ev.content || '';
        break;
      case 'answer.delta':
        this.answer += ev.content || '';
        this.stage = '';
        break;
      case 'usage':
        this.usage = ev;
        break;
      case 'error':
        if (!this.error) this.error = ev.message || 'Something went wrong.';
        break;
      case 'stream.finished':
        this.status = ev.status;
        this.done = true;
        this.stage = '';
        break;
    }
    this.changed();
  };

  AnswerView.prototype.changed = function () {
    var self = this;
    if (this.done) this.dropSnapshot();
    else if (!this.saveTimer) this.saveTimer = setTimeout(function () { self.saveSnapshot(); }, 150);
    if (this.renderQueued) return;
    this.renderQueued = true;
    requestAnimationFrame(function () { self.renderQueued = false; self.render(); });
  };

  // setSaved shows the message as the server saved it.
  AnswerView.prototype.setSaved = function (m) {
    this.id = m.id;
    this.thinking = m.thinking || '';
    this.answer = m.content || '';
    this.refs = m.references || [];
    this.status = m.status;
    this.error = m.error || '';
    this.usage = m.usage;
    this.done = m.status !== 'streaming';
    this.stage = '';
    if (this.done) this.dropSnapshot();
    runHooks('saved', this, m);
    this.render();
  };

  AnswerView.prototype.snapshotKey = function () { return SNAP_PREFIX + this.id; };

  AnswerView.prototype.saveSnapshot = function () {
    clearTimeout(this.saveTimer);
    this.saveTimer = null;
    // A side-by-side answer keeps no snapshot: a reload replays its stream.
    if (!this.id || this.done || this.sub || this.sbs) return;
    try {
      localStorage.setItem(this.snapshotKey(), JSON.stringify({
        v: 1, t: Date.now(), session: this.session, seq: this.seq, thinking: this.thinking,
        answer: this.answer, refs: this.refs, rewritten: this.rewritten, error: this.error,
        mark: this.attemptMark || null
      }));
    } catch (e) { /* storage full or disabled: a reload replays the stream from the start */ }
  };

  AnswerView.prototype.dropSnapshot = function () {
    clearTimeout(this.saveTimer);
    this.saveTimer = null;
    if (this.id) localStorage.removeItem(this.snapshotKey());
  };

  // restore loads the snapshot of this answer, if the page kept one.
  AnswerView.prototype.restore = function () {
    var s = null;
    try { s = JSON.parse(localStorage.getItem(this.snapshotKey()) || 'null'); } catch (e) { s = null; }
    if (!s || s.v !== 1) return false;
    this.seq = s.seq;
    this.thinking = s.thinking;
    this.answer = s.answer;
    this.refs = s.refs || [];
    this.rewritten = s.rewritten || '';
    this.error = s.error || '';
    this.attemptMark = s.mark || null; // a resumed attempt may still be withdrawn
    this.render();
    return true;
  };

  function cleanThinking(t) {
    return t.replace(/<\/?think>/g, '').replace(/^\s+/, '');
  }

  function maxIndex(refs) {
    return refs.reduce(function (n, r) { return Math.max(n, r.index || 0); }, 0);
  }

  AnswerView.prototype.render = function () {
    this.el.dataset.status = this.status;
    if (this.id) this.el.dataset.id = this.id;
    var showProgress = !this.done && (this.reconnecting || this.stage || (!this.answer && !this.thinking));
    this.progressEl.hidden = !showProgress;
    this.progressEl.textContent = this.reconnecting ? 'Connection lost; reconnecting…' : (this.stage || 'Waiting for the answer…');
    this.rewrittenEl.hidden = !this.rewritten;
    this.rewrittenEl.textContent = this.rewritten ? 'Searched for: ' + this.rewritten : '';

    var thought = cleanThinking(this.thinking);
    this.thinkingEl.hidden = !thought;
    this.thinkingBody.textContent = thought;
    if (!this.thinkingToggled) this.thinkingEl.open = !this.answer && !this.done;
    this.thinkingEl.firstChild.textContent = (!this.answer && !this.done) ? 'Thinking…' : 'Thought process';

    this.answerEl.innerHTML = md.render(this.answer, { refCount: maxIndex(this.refs), refPrefix: 'ref-' + (this.id || 'new') });
    this.renderRefs();
    this.renderMeta();
    if (this.research) this.research.render(); // research.js
    runHooks('render', this);
  };

  AnswerView.prototype.renderRefs = function () {
    var refs = this.refs;
    this.refsEl.hidden = refs.length === 0;
    this.refsEl.textContent = '';
    if (!refs.length) return;
    this.refsEl.append(el('h3', '', 'References'));
    var ol = el('ol');
    var prefix = 'ref-' + (this.id || 'new');
    refs.forEach(function (r) {
      var li = el('li', 'ref');
      li.id = prefix + '-' + r.index;
      var d = el('details');
      var s = el('summary');
      s.append(el('span', 'num', '[' + r.index + ']'), el('span', 'title', r.title || 'Untitled'));
      if (r.heading && r.heading !== r.title) s.append(el('span', 'heading', ' · ' + r.heading));
      if (r.page > 0) s.append(el('span', 'page', ' · p. ' + r.page));
      d.append(s, el('p', 'passage', r.content || ''));
      li.append(d);
      ol.append(li);
    });
    this.refsEl.append(ol);
  };

  AnswerView.prototype.renderMeta = function () {
    this.metaEl.textContent = '';
    var labels = { stopped: 'Stopped', failed: 'Failed' };
    if (this.done && labels[this.status]) this.metaEl.append(el('span', 'status ' + this.status, labels[this.status]));
    if (this.usage && this.done) {
      var u = this.usage;
      var parts = [];
      if (u.prompt_tokens || u.completion_tokens) parts.push(u.prompt_tokens + ' → ' + u.completion_tokens + ' tokens');
      if (u.total_ms >= 100) parts.push((u.total_ms / 1000).toFixed(1) + ' s');
      if (parts.length) this.metaEl.append(el('span', 'usage', parts.join(' · ')));
    }
    this.metaEl.hidden = !this.metaEl.childNodes.length;
    this.errorEl.hidden = !(this.error && this.status === 'failed');
    this.errorEl.textContent = this.error;
  };

  // reloadSaved shows the saved message; while the server still generates
  // it (its live window was lost), it waits for the end.
  AnswerView.prototype.reloadSaved = async function (signal) {
    for (;;) {
      var data;
      try {
        data = await C.api('GET', '/api/v1/sessions/' + encodeURIComponent(this.session) + '/messages');
      } catch (e) {
        if (signal.aborted) return;
        await C.sleep(2000, signal);
        continue;
      }
      var self = this;
      var m = (data.messages || []).find(function (x) { return x.id === self.id; });
      if (!m) { this.done = true; this.status = 'failed'; this.error = 'This answer is no longer saved.'; this.render(); return; }
      if (m.status !== 'streaming') { this.setSaved(m); return; }
      await C.sleep(2000, signal);
      if (signal.aborted) return;
    }
  };

  // follow reads the answer's stream to its end: from resp when given,
  // then — after a dropped connection — from the stream after the last
  // seq applied, with backoff. It resolves when the answer is done or
  // signal is aborted (the page stopped reading; the server goes on).
  async function follow(view, resp, signal) {
    var failures = 0;
    var resync = false;
    function onFrame(f) {
      if (f.type === 'resync_required') { resync = true; return; }
      var ev;
      try { ev = JSON.parse(f.data); } catch (e) { return; }
      failures = 0;
      view.apply(ev);
    }
    while (!view.done && !signal.aborted) {
      if (!resp) {
        if (failures > 0) await C.sleep(Math.min(8000, 300 * Math.pow(2, failures - 1)), signal);
        if (signal.aborted) break;
        try {
          resp = await fetch('/api/v1/streams/' + encodeURIComponent(view.id) + '?after=' + view.seq,
            { headers: C.headers({ Accept: 'text/event-stream' }), signal: signal });
        } catch (e) {
          failures++;
          continue;
        }
        if (resp.status === 204 || resp.status === 404) { resp = null; await view.reloadSaved(signal); break; }
        if (!resp.ok) {
          if (resp.status === 401) { await C.errorOf(resp); break; }
          resp = null;
          failures++;
          continue;
        }
        view.reconnecting = false;
        view.changed();
      }
      try {
        await C.readSSE(resp, onFrame);
      } catch (e) {
        failures++;
      }
      resp = null;
      if (resync) { await view.reloadSaved(signal); break; }
      if (!view.done && !signal.aborted) { view.reconnecting = true; view.changed(); }
    }
  }

  // cleanSnapshots forgets snapshots of answers not seen for a day.
  function cleanSnapshots() {
    var now = Date.now();
    for (var i = localStorage.length - 1; i >= 0; i--) {
      var k = localStorage.key(i);
      if (!k || k.indexOf(SNAP_PREFIX) !== 0) continue;
      try {
        var s = JSON.parse(localStorage.getItem(k));
        if (!s || now - s.t > SNAP_MAX_AGE) localStorage.removeItem(k);
      } catch (e) { localStorage.removeItem(k); }
    }
  }

  C.el = el;
  C.AnswerView = AnswerView;
  C.follow = follow;
  C.cleanSnapshots = cleanSnapshots;
})(window);
