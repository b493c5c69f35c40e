// Side-by-side answers on the chat page: when several models answer one
// question (stream.started lists "models"), each gets its own answer view
// in a column (tabs at phone width), fed with the events that carry its
// placement.model. The host view keeps reading the one stream, so stop,
// resume and reload work as for any answer. Once saved, the answers are
// versions of one answer (sibling_ids), shown one at a time.
(function (global) {
  'use strict';

  var C = global.Chatpipe;

  // start turns view into the host of one answer per model.
  // models: [{model, message_id}].
  function start(view, models) {
    var g = view.sbs = { panes: {}, order: [] };
    view.el.classList.add('sbs-host');
    g.el = C.el('div', 'sbs');
    g.tabs = C.el('div', 'sbs-tabs');
    g.tabs.setAttribute('role', 'tablist');
    g.cols = C.el('div', 'sbs-cols');
    g.el.append(g.tabs, g.cols);
    models.forEach(function (m, i) {
      var sub = new C.AnswerView(m.message_id || null, view.session);
      sub.sub = true;
      sub.host = view;
      sub.streamId = view.id;
      sub.model = m.model;
      var pane = C.el('section', 'sbs-pane');
      pane.dataset.model = m.model;
      pane.append(C.el('h3', 'sbs-model', m.model), sub.el);
      var tab = C.el('button', 'sbs-tab', m.model);
      tab.type = 'button';
      tab.setAttribute('role', 'tab');
      tab.addEventListener('click', function () { select(g, m.model); });
      g.tabs.append(tab);
      g.cols.append(pane);
      g.panes[m.model] = { view: sub, pane: pane, tab: tab };
      g.order.push(m.model);
      if (i === 0) select(g, m.model);
    });
    view.el.insertBefore(g.el, view.metaEl);
    view.reloadSaved = reloadGroup;
  }

  function select(g, model) {
    g.order.forEach(function (name) {
      var p = g.panes[name];
      var on = name === model;
      p.pane.classList.toggle('active', on);
      p.tab.classList.toggle('active', on);
      p.tab.setAttribute('aria-selected', on ? 'true' : 'false');
    });
  }

  // route gives an event of a side-by-side stream to its model's view.
  function route(view, ev) {
    if (!view.sbs) {
      if (ev.type === 'stream.started' && ev.models && ev.models.length > 1) start(view, ev.models);
      return false;
    }
    var model = ev.placement && ev.placement.model;
    var p = model && view.sbs.panes[model];
    if (p) {
      if (!p.view.done) p.view.apply(ev);
      return true;
    }
    if (ev.type === 'stream.finished') {
      view.sbs.order.forEach(function (name) {
        var v = view.sbs.panes[name].view;
        if (!v.done) v.apply({ type: 'stream.finished', status: v.error ? 'failed' : ev.status });
      });
    }
    return false;
  }

  // reloadGroup shows every model's saved message (the replay window is
  // gone), waiting while the server still writes one of them.
  async function reloadGroup(signal) {
    var view = this;
    for (;;) {
      var data = null;
      try {
        data = await C.api('GET', '/api/v1/sessions/' + encodeURIComponent(view.session) + '/messages?all=true');
      } catch (e) {
        if (signal.aborted) return;
      }
      if (data) {
        var byId = {};
        (data.messages || []).forEach(function (m) { byId[m.id] = m; });
        var streaming = false;
        view.sbs.order.forEach(function (name) {
          var v = view.sbs.panes[name].view;
          var m = byId[v.id];
          if (m && m.status === 'streaming') streaming = true;
          else if (m) v.setSaved(m);
        });
        if (!streaming) {
          view.done = true;
          view.status = 'completed';
          view.render();
          return;
        }
      }
      await C.sleep(2000, signal);
      if (signal.aborted) return;
    }
  }

  C.answerHooks = C.answerHooks || [];
  C.answerHooks.unshift({ apply: route }); // before the others: a model's events are its view's
})(window);
