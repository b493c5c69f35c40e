// Model-call attempts and streamed tool output on the chat page.
//
// A model call attempt that ends uncommitted (model_call.finished with
// committed false: the provider stream broke and the call is made again)
// is withdrawn: the answer and thinking text, and the tool calls, it
// streamed since its model_call.started are dropped, so the page shows
// what the saved answer holds. tool_call.output.delta adds a running
// tool's output to its block in the tool panel (tools.js).
(function (global) {
  'use strict';

  var C = global.Chatpipe;

  function toolCount(view) { return view.tools ? view.tools.calls.length : 0; }

  // withdraw drops what an uncommitted attempt streamed.
  function withdraw(view, mark) {
    view.answer = view.answer.slice(0, mark.answer);
    view.thinking = view.thinking.slice(0, mark.thinking);
    var panel = view.tools;
    if (!panel) return;
    while (panel.calls.length > mark.tools) {
      var c = panel.calls.pop();
      delete panel.byId[c.id];
      if (c.node && c.node.root.parentNode) c.node.root.remove();
    }
  }

  C.answerHooks = C.answerHooks || [];
  C.answerHooks.push({
    apply: function (view, ev) {
      switch (ev.type) {
        case 'model_call.started':
          view.attemptMark = { answer: view.answer.length, thinking: view.thinking.length, tools: toolCount(view) };
          return true;
        case 'model_call.finished':
          if (ev.committed === false && view.attemptMark) withdraw(view, view.attemptMark);
          return true;
        case 'tool_call.output.delta':
          if (view.tools) view.tools.appendOutput(ev.tool_call_id, ev.output);
          return true;
      }
      return false;
    }
  });
})(window);
