// Tool calls and model-call attempts of an answer on the chat page (agent
// mode): each tool call gets a block above the answer with its arguments,
// the output it streams (tool_call.output.delta) and its result; an
// approval request shows there too.
//
// A model call attempt that ends uncommitted (model_call.finished with
// committed false: the provider stream broke and the call is made again)
// is withdrawn: the answer and thinking text, and the tool blocks, it
// streamed since its model_call.started are dropped, so the page shows
// what the saved answer holds.
(function (global) {
  'use strict';

  var C = global.Chatpipe;

  function el(tag, cls, text) { return C.el(tag, cls, text); }

  // container returns the answer's block of tool calls, made on first use.
  function container(view) {
    if (!view.toolsEl) {
      view.toolsEl = el('div', 'tools');
      view.tools = {};
      view.el.insertBefore(view.toolsEl, view.answerEl);
    }
    return view.toolsEl;
  }

  function block(view, id, name) {
    container(view);
    var b = view.tools[id];
    if (b) return b;
    b = { id: id, name: name || 'tool', args: '', output: '', status: 'running' };
    b.el = el('details', 'tool');
    b.el.dataset.toolCallId = id;
    b.summary = el('summary', 'tool-summary');
    b.argsEl = el('pre', 'tool-args');
    b.outputEl = el('pre', 'tool-output');
    b.el.append(b.summary, b.argsEl, b.outputEl);
    b.el.open = true;
    view.tools[id] = b;
    view.toolsEl.append(b.el);
    return b;
  }

  var STATUS = { running: 'running…', approval: 'waiting for approval…', completed: 'done', failed: 'failed', denied: 'denied' };

  function paint(b) {
    b.el.dataset.status = b.status;
    b.summary.textContent = b.name + ' · ' + (STATUS[b.status] || b.status);
    b.argsEl.textContent = b.args;
    b.argsEl.hidden = !b.args;
    b.outputEl.textContent = b.output;
    b.outputEl.hidden = !b.output;
  }

  // apply takes an event AnswerView does not handle itself; it reports
  // whether the view changed.
  function apply(view, ev) {
    var b;
    switch (ev.type) {
      case 'model_call.started':
        view.attemptMark = { answer: view.answer.length, thinking: view.thinking.length,
          tools: view.toolsEl ? view.toolsEl.childNodes.length : 0 };
        return false;
      case 'model_call.finished':
        if (ev.committed === false && view.attemptMark) withdraw(view, view.attemptMark);
        return ev.committed === false;
      case 'tool_call.start':
        b = block(view, ev.tool_call_id, ev.name);
        break;
      case 'tool_call.delta':
        b = block(view, ev.tool_call_id);
        b.args += ev.arguments || '';
        break;
      case 'tool_call.end':
        b = block(view, ev.tool_call_id, ev.name);
        if (ev.arguments) b.args = ev.arguments;
        break;
      case 'tool_call.approval_request':
        b = block(view, ev.tool_call_id, ev.name);
        b.status = 'approval';
        break;
      case 'tool_call.approval_decision':
        b = block(view, ev.tool_call_id, ev.name);
        if (b.status === 'approval') b.status = 'running';
        break;
      case 'tool_call.output.delta':
        b = block(view, ev.tool_call_id);
        b.output += ev.output || '';
        break;
      case 'tool_result':
        b = block(view, ev.tool_call_id);
        b.output = ev.output || '';
        b.status = ev.status || 'completed';
        b.el.open = false;
        break;
      default:
        return false;
    }
    paint(b);
    return true;
  }

  // withdraw drops what an uncommitted attempt streamed.
  function withdraw(view, mark) {
    view.answer = view.answer.slice(0, mark.answer);
    view.thinking = view.thinking.slice(0, mark.thinking);
    if (!view.toolsEl) return;
    while (view.toolsEl.childNodes.length > mark.tools) {
      var node = view.toolsEl.lastChild;
      delete view.tools[node.dataset.toolCallId];
      node.remove();
    }
  }

  C.applyToolEvent = apply;
})(window);
