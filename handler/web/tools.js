// Tool activity of an agent answer on the chat page: each tool call with
// its arguments and result (collapsible), and approval requests with
// Approve / Deny buttons that answer them through
// POST /api/v1/streams/{id}/approvals/{tool_call_id}.
//
// Other page files can use a view's panel (view.tools): apply(ev) takes a
// tool event, appendOutput(id, text) adds streamed output to a call, and
// setSaved(list) shows the calls a saved message records.
(function (global) {
  'use strict';

  var C = global.Chatpipe;

  var STATUS_LABELS = {
    running: 'Running…',
    calling: 'Preparing the call…',
    waiting: 'Waiting for your approval',
    completed: 'Done',
    failed: 'Failed',
    denied: 'Denied',
    none: 'No result' // the answer ended before the tool's result came
  };

  var REASONS = {
    user: 'by you',
    timeout: 'no answer in time',
    stopped: 'the answer was stopped',
    unavailable: 'nobody could be asked'
  };

  function ToolPanel(view) {
    this.view = view;
    this.calls = [];
    this.byId = {};
    this.el = C.el('section', 'tools');
    this.el.setAttribute('aria-label', 'Tool calls');
    this.el.hidden = true;
  }

  // call returns the call of that id, created when first seen.
  ToolPanel.prototype.call = function (id) {
    var c = this.byId[id];
    if (!c) {
      c = { id: id, name: '', args: '', output: '', status: 'calling', durationMS: 0, approval: null, sending: false, problem: '' };
      this.byId[id] = c;
      this.calls.push(c);
    }
    return c;
  };

  // apply takes one tool event; it returns false for other events.
  ToolPanel.prototype.apply = function (ev) {
    if (!ev.tool_call_id) return false;
    var c;
    switch (ev.type) {
      case 'tool_call.start':
        c = this.call(ev.tool_call_id);
        c.name = ev.name || c.name;
        break;
      case 'tool_call.delta':
        c = this.call(ev.tool_call_id);
        c.args += ev.arguments || '';
        break;
      case 'tool_call.end':
        c = this.call(ev.tool_call_id);
        if (ev.arguments !== undefined) c.args = ev.arguments;
        if (ev.name) c.name = ev.name;
        if (c.status === 'calling') c.status = 'running';
        break;
      case 'tool_call.approval_request':
        c = this.call(ev.tool_call_id);
        c.name = ev.name || c.name;
        if (ev.arguments) c.args = ev.arguments;
        if (!c.approval || !c.approval.decision) {
          c.approval = { expiresAt: ev.expires_at || 0, decision: '', reason: '' };
          c.status = 'waiting';
        }
        break;
      case 'tool_call.approval_decision':
        c = this.call(ev.tool_call_id);
        c.approval = c.approval || { expiresAt: 0 };
        c.approval.decision = ev.decision;
        c.approval.reason = ev.reason || '';
        if (c.status === 'waiting') c.status = ev.decision === 'allow' ? 'running' : 'denied';
        break;
      case 'tool_result':
        c = this.call(ev.tool_call_id);
        c.status = ev.status || 'completed';
        c.output = ev.output || '';
        break;
      default:
        return false;
    }
    return true;
  };

  // appendOutput adds output a tool streams while it runs.
  ToolPanel.prototype.appendOutput = function (id, text) {
    this.call(id).output += text || '';
    this.view.changed();
  };

  // setSaved shows the tool calls a saved message records: objects with
  // id (or tool_call_id), name, arguments, output (or result), status ("" =
  // no result came) and duration_ms.
  ToolPanel.prototype.setSaved = function (list) {
    var self = this;
    (list || []).forEach(function (t) {
      var c = self.call(t.id || t.tool_call_id || t.name);
      c.name = t.name || c.name;
      c.args = t.arguments || c.args;
      c.output = t.output !== undefined ? t.output : (t.result !== undefined ? t.result : c.output);
      c.status = t.status || 'none';
      c.durationMS = t.duration_ms || 0;
      if (t.approval) c.approval = { decision: t.approval.decision || '', reason: t.approval.reason || '' };
    });
  };

  // decide answers the call's approval request.
  ToolPanel.prototype.decide = async function (c, decision) {
    var stream = this.view.streamId || this.view.id;
    if (!stream || c.sending) return;
    c.sending = true;
    c.problem = '';
    this.render();
    try {
      await C.api('POST', '/api/v1/streams/' + encodeURIComponent(stream) + '/approvals/' + encodeURIComponent(c.id), { decision: decision });
      // The stream brings tool_call.approval_decision.
    } catch (e) {
      c.problem = e.status === 404 ? 'This call no longer waits for an answer.' : e.message;
    }
    c.sending = false;
    this.render();
  };

  function pretty(args) {
    if (!args) return '';
    try { return JSON.stringify(JSON.parse(args), null, 2); } catch (e) { return args; }
  }

  function preview(args) {
    var s = (args || '').replace(/\s+/g, ' ');
    return s.length > 80 ? s.slice(0, 77) + '…' : s;
  }

  // node builds (once) the elements of one call; render fills them.
  ToolPanel.prototype.node = function (c) {
    if (c.node) return c.node;
    var self = this;
    var n = {};
    n.root = C.el('div', 'tool-call');
    n.root.dataset.callId = c.id;
    n.details = C.el('details');
    var summary = C.el('summary');
    n.name = C.el('span', 'tool-name');
    n.status = C.el('span', 'tool-status');
    n.preview = C.el('span', 'tool-args-preview');
    summary.append(n.name, n.status, n.preview);
    n.argsHead = C.el('div', 'tool-label', 'Arguments');
    n.args = C.el('pre', 'tool-args');
    n.outHead = C.el('div', 'tool-label', 'Result');
    n.output = C.el('pre', 'tool-output');
    n.details.append(summary, n.argsHead, n.args, n.outHead, n.output);
    n.approval = C.el('div', 'approval');
    n.approval.setAttribute('role', 'group');
    n.question = C.el('span', 'approval-question');
    n.allow = C.el('button', 'btn primary approve', 'Approve');
    n.allow.type = 'button';
    n.deny = C.el('button', 'btn deny', 'Deny');
    n.deny.type = 'button';
    n.allow.addEventListener('click', function () { self.decide(c, 'allow'); });
    n.deny.addEventListener('click', function () { self.decide(c, 'deny'); });
    n.decision = C.el('span', 'approval-decision');
    n.problem = C.el('span', 'approval-problem');
    n.approval.append(n.question, n.allow, n.deny, n.decision, n.problem);
    n.root.append(n.details, n.approval);
    c.node = n;
    return n;
  };

  ToolPanel.prototype.render = function () {
    var self = this;
    this.el.hidden = this.calls.length === 0;
    this.calls.forEach(function (c) {
      var n = self.node(c);
      if (n.root.parentNode !== self.el) self.el.append(n.root);
      n.root.dataset.status = c.status;
      n.name.textContent = c.name || 'tool';
      var label = STATUS_LABELS[c.status] || c.status;
      if (c.durationMS && c.status !== 'waiting') label += ' · ' + (c.durationMS / 1000).toFixed(1) + ' s';
      n.status.textContent = label;
      n.preview.textContent = preview(c.args);
      n.args.textContent = pretty(c.args);
      n.argsHead.hidden = n.args.hidden = !c.args;
      n.output.textContent = c.output;
      n.outHead.hidden = n.output.hidden = !c.output;
      var a = c.approval;
      var pending = !!a && !a.decision;
      n.approval.hidden = !a;
      if (!a) return;
      n.question.textContent = pending ? 'Allow “' + (c.name || 'tool') + '” to run with these arguments?' : '';
      n.question.hidden = !pending;
      n.allow.hidden = n.deny.hidden = !pending || self.view.done;
      n.allow.disabled = n.deny.disabled = c.sending;
      n.decision.hidden = pending;
      n.decision.textContent = pending ? '' : (a.decision === 'allow' ? 'Approved' : 'Denied') +
        (REASONS[a.reason] ? ' (' + REASONS[a.reason] + ')' : '');
      n.problem.textContent = c.problem;
      n.problem.hidden = !c.problem;
      if (pending && !c.shownArgs) { c.shownArgs = true; n.details.open = true; }
    });
  };

  C.ToolPanel = ToolPanel;
  C.answerHooks = C.answerHooks || [];
  C.answerHooks.push({
    build: function (view) {
      view.tools = new ToolPanel(view);
      view.el.insertBefore(view.tools.el, view.answerEl);
    },
    apply: function (view, ev) { return view.tools.apply(ev); },
    saved: function (view, m) { if (m.tool_calls) view.tools.setSaved(m.tool_calls); },
    render: function (view) { view.tools.render(); }
  });
})(window);
