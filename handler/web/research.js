// The research mode's nested blocks in an answer: the plan, then one
// collapsible block per sub-researcher with its live progress (searches,
// tool results, its findings as they stream), above the report.
//
// Events of a subagent carry an origin chain ([{agent, id, index}], the
// outermost agent first); AnswerView hands them here instead of folding
// them into the answer, so the report alone is the answer. Deeper hops (a
// sub-researcher's own subagents) are counted into their outermost
// sub-researcher's block.
(function (global) {
  'use strict';

  var C = global.Chatpipe;
  var md = global.ChatpipeMarkdown;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function ResearchView(answer) {
    this.answer = answer;
    this.questions = [];
    this.clarification = '';
    this.planText = '';
    this.planDone = false;
    this.subs = [];
    this.el = el('section', 'research');
    this.planEl = el('details', 'research-plan');
    this.planEl.open = true;
    this.planSummary = el('summary', '', 'Planning the research…');
    this.planBody = el('div', 'research-plan-body');
    this.planEl.append(this.planSummary, this.planBody);
    this.subsEl = el('div', 'subagents');
    this.el.append(this.planEl, this.subsEl);
    answer.el.insertBefore(this.el, answer.thinkingEl);
  }

  ResearchView.prototype.sub = function (hop) {
    var i = (hop.index || 1) - 1;
    while (this.subs.length <= i) this.subs.push(null);
    if (!this.subs[i]) {
      var s = { index: i + 1, id: hop.id || '', question: this.questions[i] || '', status: 'started', detail: '',
        text: '', thinking: false, tools: [], refs: 0, nested: 0 };
      s.el = el('details', 'subagent');
      s.el.dataset.index = String(i + 1);
      s.summary = el('summary');
      s.progress = el('div', 'sub-progress');
      s.body = el('div', 'sub-findings');
      s.el.append(s.summary, s.progress, s.body);
      this.subs[i] = s;
      var next = null;
      for (var j = i + 1; j < this.subs.length && !next; j++) if (this.subs[j]) next = this.subs[j].el;
      this.subsEl.insertBefore(s.el, next);
    }
    return this.subs[i];
  };

  // apply takes one event with an origin, or a research.plan.
  ResearchView.prototype.apply = function (ev) {
    if (ev.type === 'research.plan') {
      this.questions = ev.questions || [];
      this.clarification = ev.clarification || '';
      this.planDone = true;
      var self = this;
      this.subs.forEach(function (s, i) { if (s && !s.question) s.question = self.questions[i] || ''; });
      return;
    }
    var hop = ev.origin[0];
    if (hop.agent === 'plan') {
      if (ev.type === 'answer.delta') this.planText += ev.content || '';
      return;
    }
    var s = this.sub(hop);
    if (ev.origin.length > 1) { s.nested++; return; }
    switch (ev.type) {
      case 'research.subagent':
        s.status = ev.status;
        if (ev.question) s.question = ev.question;
        s.detail = ev.detail || '';
        if (ev.references) s.refs = ev.references;
        break;
      case 'thinking.start': s.thinking = true; break;
      case 'thinking.end': s.thinking = false; break;
      case 'answer.delta': s.text += ev.content || ''; s.thinking = false; break;
      case 'tool_call.start': s.tools.push({ id: ev.tool_call_id, name: ev.name || 'tool', args: '', status: 'running' }); break;
      case 'tool_call.end':
        s.tools.forEach(function (t) { if (t.id === ev.tool_call_id && ev.arguments) t.args = ev.arguments; });
        break;
      case 'tool_result':
        s.tools.forEach(function (t) { if (t.id === ev.tool_call_id) t.status = ev.status; });
        break;
      case 'references': s.refs = (ev.items || []).length; break;
    }
  };

  function toolLine(t) {
    var q = '';
    try { q = JSON.parse(t.args || '{}').query || ''; } catch (e) { q = ''; }
    var mark = t.status === 'running' ? '…' : t.status === 'completed' ? '✓' : '✗';
    return mark + ' ' + t.name + (q ? ': ' + q : '');
  }

  ResearchView.prototype.render = function () {
    var done = this.answer.done;
    if (this.clarification) this.planSummary.textContent = 'Clarifying question';
    else if (this.planDone) this.planSummary.textContent = 'Research plan · ' + this.questions.length + ' sub-questions';
    this.planBody.textContent = '';
    if (this.questions.length) {
      var ol = el('ol', 'plan-questions');
      this.questions.forEach(function (q) { ol.append(el('li', '', q)); });
      this.planBody.append(ol);
    } else {
      this.planBody.append(el('div', 'plan-text', this.planText || (this.clarification ? '' : 'Writing the plan…')));
    }
    var labels = { started: 'researching', finished: 'done', failed: 'failed' };
    this.subs.forEach(function (s) {
      if (!s) return;
      var status = s.status === 'started' && done ? 'stopped' : s.status;
      s.el.dataset.status = status;
      s.summary.textContent = '';
      var lines = s.tools.map(toolLine);
      // Collapsed, the block still shows what it is doing now.
      var now = status !== 'started' ? '' : s.thinking ? 'thinking' : s.text ? 'writing its findings' :
        lines.length ? lines[lines.length - 1] : '';
      s.summary.append(el('span', 'num', s.index + '.'), el('span', 'sub-question', ' ' + (s.question || 'Sub-question ' + s.index)),
        el('span', 'sub-status ' + status, ' · ' + (labels[status] || status)), el('span', 'sub-now', now ? ' · ' + now : ''));
      if (s.thinking) lines.push('Thinking…');
      if (s.refs) lines.push(s.refs + (s.refs === 1 ? ' passage found' : ' passages found'));
      if (s.nested) lines.push(s.nested + ' events of nested agents');
      if (s.detail) lines.push(s.detail);
      s.progress.textContent = lines.join('\n');
      s.body.innerHTML = s.text ? md.render(s.text, { refCount: 0, refPrefix: 'sub-' + s.index }) : '';
    });
  };

  C.ResearchView = ResearchView;
})(window);
