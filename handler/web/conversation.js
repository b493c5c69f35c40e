// What a user does with a conversation on the chat page: copy an answer,
// regenerate it, edit a question, switch between versions (‹ 2/3 ›),
// thumbs up/down with a comment, rename the chat, see a generated title
// arrive, and confirm a deletion. It calls the public HTTP API only:
//   POST /api/v1/messages/{id}/regenerate, POST /api/v1/sessions/{id}/messages
//   {"parent_id"}, PATCH /api/v1/sessions/{id} {"current_leaf"|"title"},
//   PUT|DELETE /api/v1/messages/{id}/feedback.
(function (global) {
  'use strict';

  var C = global.Chatpipe;

  // ---- Confirmation ----

  // confirmDialog asks a yes/no question in a modal dialog and resolves
  // true when the user confirms.
  function confirmDialog(message, okLabel) {
    var d = document.getElementById('confirm');
    document.getElementById('confirm-text').textContent = message;
    var ok = document.getElementById('confirm-ok');
    ok.textContent = okLabel || 'OK';
    return new Promise(function (resolve) {
      d.returnValue = '';
      // A close event of the dialog's previous use may still be queued when
      // it opens again (Cancel, then Delete at once): ignore it while open.
      function onClose() {
        if (d.open) return;
        d.removeEventListener('close', onClose);
        resolve(d.returnValue === 'ok');
      }
      d.addEventListener('close', onClose);
      d.showModal();
      document.getElementById('confirm-cancel').focus();
    });
  }

  // ---- Answer actions ----

  function button(cls, text, title) {
    var b = C.el('button', 'act ' + cls, text);
    b.type = 'button';
    if (title) { b.title = title; b.setAttribute('aria-label', title); }
    return b;
  }

  // switcher builds ‹ i/n › over a message's versions (sibling_ids).
  function switcher(id, siblings) {
    var box = C.el('span', 'versions');
    if (!siblings || siblings.length < 2) { box.hidden = true; return box; }
    var i = siblings.indexOf(id);
    var prev = button('prev', '‹', 'Previous version');
    var next = button('next', '›', 'Next version');
    prev.disabled = i <= 0;
    next.disabled = i < 0 || i >= siblings.length - 1;
    prev.addEventListener('click', function () { switchTo(siblings[i - 1]); });
    next.addEventListener('click', function () { switchTo(siblings[i + 1]); });
    box.append(prev, C.el('span', 'count', (i + 1) + '/' + siblings.length), next);
    return box;
  }

  // switchTo shows the branch through message id: the session's current
  // leaf becomes it, and the page shows the session's branch again.
  async function switchTo(id) {
    var app = C.app;
    if (app.state.live) return;
    var session = app.state.session;
    try {
      await C.api('PATCH', '/api/v1/sessions/' + encodeURIComponent(session), { current_leaf: id });
    } catch (e) {
      app.showBanner(e.message);
      return;
    }
    await app.openSession(session);
  }

  async function copyText(text) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch (e) {
      // No clipboard permission (an insecure origin, a denied prompt): the
      // selection-based copy still works from a click.
      var ta = C.el('textarea');
      ta.value = text;
      ta.setAttribute('readonly', '');
      ta.style.position = 'fixed';
      ta.style.opacity = '0';
      document.body.append(ta);
      ta.select();
      var ok = false;
      try { ok = document.execCommand('copy'); } catch (e2) { ok = false; }
      ta.remove();
      return ok;
    }
  }

  // removeFrom takes node and every message after it off the page: they
  // belong to the branch being left.
  function removeFrom(node) {
    while (node) {
      var next = node.nextSibling;
      if (node.id !== 'empty') node.remove();
      node = next;
    }
  }

  // afterwards refreshes the branch once a regenerated or edited answer
  // is done, so every version count and id is the server's.
  function refreshWhenDone(view) {
    if (!view) return;
    var session = C.app.state.session;
    view.onDone = function () {
      if (C.app.state.session === session) C.app.openSession(session);
    };
  }

  async function regenerate(view) {
    var app = C.app;
    if (app.state.live || !view.id) return;
    app.showBanner('');
    removeFrom(view.el);
    var body = {};
    var mode = app.mode();
    if (mode) body.mode = mode;
    refreshWhenDone(await app.startAnswer('/api/v1/messages/' + encodeURIComponent(view.id) + '/regenerate', body));
  }

  // Feedback: up or down, with an optional comment and reason; choosing
  // the same rating again removes it.
  var REASONS = [
    ['', 'Reason (optional)'],
    ['incorrect', 'Incorrect'],
    ['incomplete', 'Incomplete'],
    ['irrelevant', 'Off topic'],
    ['bad_sources', 'Wrong sources'],
    ['other', 'Other']
  ];

  async function rate(view, rating) {
    var path = '/api/v1/messages/' + encodeURIComponent(view.id) + '/feedback';
    var old = view.feedback;
    try {
      if (old && old.rating === rating) {
        await C.api('DELETE', path);
        view.feedback = null;
      } else {
        view.feedback = await C.api('PUT', path, { rating: rating }) || { rating: rating };
        if (!view.feedback.rating) view.feedback = { rating: rating };
        view.commenting = true;
      }
    } catch (e) {
      view.feedbackProblem = e.message;
    }
    view.render();
  }

  async function sendComment(view, comment, reason) {
    var body = { rating: view.feedback.rating };
    if (comment) body.comment = comment;
    if (reason) body.reason = reason;
    try {
      var fb = await C.api('PUT', '/api/v1/messages/' + encodeURIComponent(view.id) + '/feedback', body);
      view.feedback = fb && fb.rating ? fb : body;
      view.commenting = false;
      view.feedbackProblem = '';
      view.feedbackThanks = true;
    } catch (e) {
      view.feedbackProblem = e.message;
    }
    view.render();
  }

  function commentForm(view) {
    var form = C.el('form', 'feedback-form');
    var reason = C.el('select', 'feedback-reason');
    REASONS.forEach(function (r) {
      var o = C.el('option', '', r[1]);
      o.value = r[0];
      reason.append(o);
    });
    var text = C.el('input', 'feedback-comment');
    text.type = 'text';
    text.placeholder = 'Tell us more (optional)';
    text.setAttribute('aria-label', 'Feedback comment');
    var send = C.el('button', 'btn', 'Send');
    send.type = 'submit';
    var close = button('close', '×', 'Close');
    close.addEventListener('click', function () { view.commenting = false; view.render(); });
    form.append(reason, text, send, close);
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      sendComment(view, text.value.trim(), reason.value);
    });
    return form;
  }

  function renderActions(view) {
    var bar = view.actionsEl;
    // A form being filled in is kept as it is across renders.
    if (view.commentEl && view.commenting && bar.contains(view.commentEl)) return;
    bar.textContent = '';
    view.commentEl = null;
    bar.hidden = !view.done || !view.id || !!view.sbs; // a side-by-side host: each answer has its own
    if (bar.hidden) return;
    var copy = button('copy', 'Copy', 'Copy the answer');
    copy.addEventListener('click', async function () {
      copy.textContent = (await copyText(view.answer)) ? 'Copied' : 'Copy failed';
      setTimeout(function () { copy.textContent = 'Copy'; }, 1500);
    });
    bar.append(copy);
    if (!view.sub && !view.sbs) {
      var regen = button('regenerate', 'Regenerate', 'Write a new answer to this question');
      regen.addEventListener('click', function () { regenerate(view); });
      bar.append(regen);
    }
    var rating = view.feedback && view.feedback.rating;
    var up = button('thumb up' + (rating === 'up' ? ' on' : ''), '▲', 'Good answer');
    var down = button('thumb down' + (rating === 'down' ? ' on' : ''), '▼', 'Bad answer');
    up.setAttribute('aria-pressed', rating === 'up' ? 'true' : 'false');
    down.setAttribute('aria-pressed', rating === 'down' ? 'true' : 'false');
    up.addEventListener('click', function () { rate(view, 'up'); });
    down.addEventListener('click', function () { rate(view, 'down'); });
    bar.append(up, down);
    bar.append(switcher(view.id, view.siblings));
    if (view.model) bar.append(C.el('span', 'model', view.model));
    if (view.compacted) bar.append(C.el('span', 'compacted', 'Earlier messages summarised (' + view.compacted + ')'));
    if (view.feedbackThanks) bar.append(C.el('span', 'feedback-thanks', 'Thanks for the feedback.'));
    if (view.feedbackProblem) bar.append(C.el('span', 'feedback-problem', view.feedbackProblem));
    if (view.commenting && rating) {
      view.commentEl = commentForm(view);
      bar.append(view.commentEl);
    }
  }

  // ---- Questions ----

  // edit turns a question into a box to rewrite it; sending the new text
  // starts a new branch from the same point (the old one stays).
  function edit(article, m) {
    var app = C.app;
    if (app.state.live || article.querySelector('form.edit')) return;
    var bubble = article.querySelector('.bubble');
    var form = C.el('form', 'edit');
    var ta = C.el('textarea');
    ta.value = m.content;
    ta.rows = Math.min(8, m.content.split('\n').length + 1);
    ta.setAttribute('aria-label', 'Edit the question');
    var save = C.el('button', 'btn primary', 'Send');
    save.type = 'submit';
    var cancel = C.el('button', 'btn', 'Cancel');
    cancel.type = 'button';
    form.append(ta, C.el('div', 'edit-buttons'));
    form.lastChild.append(cancel, save);
    bubble.hidden = true;
    article.append(form);
    ta.focus();
    function close() { form.remove(); bubble.hidden = false; }
    cancel.addEventListener('click', close);
    ta.addEventListener('keydown', function (ev) {
      if (ev.key === 'Escape') { ev.preventDefault(); ev.stopPropagation(); close(); }
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); form.requestSubmit(); }
    });
    form.addEventListener('submit', async function (ev) {
      ev.preventDefault();
      var text = ta.value;
      if (!text.trim() || app.state.live) return;
      app.showBanner('');
      removeFrom(article);
      app.addUser(text);
      var body = { content: text, parent_id: m.parent_id || null }; // null: a new first question
      var mode = app.mode();
      if (mode) body.mode = mode;
      refreshWhenDone(await app.startAnswer('/api/v1/sessions/' + encodeURIComponent(app.state.session) + '/messages', body));
    });
  }

  // userShown adds Edit and the version switcher under a saved question.
  function userShown(article, m) {
    if (!m.id) return;
    var bar = C.el('div', 'actions user-actions');
    var e = button('edit', 'Edit', 'Edit this question');
    e.addEventListener('click', function () { edit(article, m); });
    bar.append(e, switcher(m.id, m.sibling_ids));
    article.append(bar);
  }

  // questionSaved gives the question just asked (shown before the answer
  // view) its id, so that it can be edited at once: it follows the answer
  // shown before it, or starts the chat.
  function questionSaved(view, id) {
    var q = view.el.previousElementSibling;
    if (!id || !q || !q.classList.contains('user') || q.dataset.id) return;
    var before = q.previousElementSibling;
    q.dataset.id = id;
    userShown(q, {
      id: id,
      content: q.querySelector('.bubble').textContent,
      parent_id: before && before.classList.contains('assistant') ? before.dataset.id || null : null,
      sibling_ids: [id]
    });
  }

  // ---- The chat's title ----

  function startRename() {
    var app = C.app;
    var session = app.state.session;
    if (!session || document.getElementById('rename-form')) return;
    var title = document.getElementById('title');
    var form = C.el('form');
    form.id = 'rename-form';
    var input = C.el('input');
    input.id = 'rename-input';
    input.type = 'text';
    input.maxLength = 200;
    input.value = title.textContent;
    input.setAttribute('aria-label', 'Chat title');
    form.append(input);
    title.hidden = true;
    document.getElementById('rename').hidden = true;
    title.after(form);
    input.focus();
    input.select();
    var done = false;
    function close() {
      if (done) return;
      done = true;
      form.remove();
      title.hidden = false;
      document.getElementById('rename').hidden = false;
    }
    async function save() {
      var text = input.value.replace(/\s+/g, ' ').trim();
      if (!text || text === title.textContent) { close(); return; }
      try {
        var s = await C.api('PATCH', '/api/v1/sessions/' + encodeURIComponent(session), { title: text });
        close();
        app.updateSession(s && s.id ? s : { id: session, title: text });
      } catch (e) {
        close();
        app.showBanner(e.message);
      }
    }
    form.addEventListener('submit', function (ev) { ev.preventDefault(); save(); });
    input.addEventListener('keydown', function (ev) {
      if (ev.key === 'Escape') { ev.preventDefault(); ev.stopPropagation(); close(); }
    });
    input.addEventListener('blur', function () { if (!done) save(); });
  }

  function isFirstAnswer(view) {
    return document.querySelector('#messages > article.assistant') === view.el;
  }

  async function readTitle(session) {
    if (!session || session !== C.app.state.session) return;
    try {
      C.app.updateSession(await C.api('GET', '/api/v1/sessions/' + encodeURIComponent(session)));
    } catch (e) { /* the title stays as it is */ }
  }

  // ---- Hooks ----

  C.confirmDialog = confirmDialog;
  C.onUserShown = userShown;
  C.answerHooks = C.answerHooks || [];
  C.answerHooks.push({
    build: function (view) {
      view.actionsEl = C.el('div', 'actions');
      view.el.append(view.actionsEl);
    },
    apply: function (view, ev) {
      if (ev.type === 'session.updated') {
        // A generated title (or a rename elsewhere) arrived on the stream.
        C.app.updateSession({ id: ev.session_id || view.session, title: ev.title });
        return true;
      }
      if (ev.type === 'history.compacted') {
        view.compacted = ev.messages || 0;
        return true;
      }
      if (ev.type === 'stream.started') {
        view.siblings = null;
        if (ev.model) view.model = ev.model;
        if (!view.sub) questionSaved(view, ev.user_message_id);
      }
      if (ev.type === 'stream.finished' && !view.sub && isFirstAnswer(view)) {
        // A title generated after the stream ended shows on the next read.
        setTimeout(function () { readTitle(view.session); }, 0);
      }
      return false;
    },
    saved: function (view, m) {
      view.siblings = m.sibling_ids || null;
      view.feedback = m.feedback || null;
      if (m.model) view.model = m.model;
    },
    render: renderActions
  });

  function init() {
    var d = document.getElementById('confirm');
    document.getElementById('confirm-ok').addEventListener('click', function () { d.close('ok'); });
    document.getElementById('confirm-cancel').addEventListener('click', function () { d.close('cancel'); });
    // The mode chosen for an open chat is kept with it.
    document.getElementById('mode').addEventListener('change', function (ev) {
      var session = C.app.state.session;
      if (!session) return;
      C.api('PATCH', '/api/v1/sessions/' + encodeURIComponent(session), { mode: ev.target.value })
        .then(C.app.updateSession, function (e) { C.app.showBanner(e.message); });
    });
    var r = document.getElementById('rename');
    if (r) r.addEventListener('click', startRename);
    document.getElementById('title').addEventListener('dblclick', startRename);
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})(window);
