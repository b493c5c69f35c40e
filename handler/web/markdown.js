// A small, safe Markdown renderer for streamed answers. Safety comes first:
// every piece of source text is HTML-escaped before any markup is added,
// and links are kept only with http, https or mailto schemes (or no scheme
// at all). It handles what models write: fenced code, inline code,
// headings, lists (nested), block quotes, tables, rules, bold, italic,
// strikethrough, links, bare URLs and [n] citation markers. Unfinished
// syntax mid-stream renders as text until it is closed.
(function (global) {
  'use strict';

  var ESC = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

  function escapeHTML(s) {
    return String(s).replace(/[&<>"']/g, function (c) { return ESC[c]; });
  }

  // safeHref returns the escaped href of a link target, or null when its
  // scheme is not allowed. Browsers ignore whitespace and control
  // characters inside a scheme ("java\tscript:"), so the check does too.
  function safeHref(url) {
    var raw = String(url).trim();
    var probe = raw.replace(/[\u0000-\u0020\u007f-\u009f]/g, '').toLowerCase();
    if (/^(https?:|mailto:)/.test(probe)) return escapeHTML(raw);
    if (/^[a-z][a-z0-9+.\-]*:/.test(probe)) return null;
    return escapeHTML(raw);
  }

  function anchor(href, inner) {
    return '<a href="' + href + '" target="_blank" rel="noopener noreferrer">' + inner + '</a>';
  }

  // emphasis marks up escaped text: bold, italic, strikethrough.
  function emphasis(s) {
    s = s.replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, '<strong>$1</strong>');
    s = s.replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?!\w)/g, '$1<strong>$2</strong>');
    s = s.replace(/\*(?=[^\s*])((?:[^*\n]*?[^\s*])?)\*/g, '<em>$1</em>');
    s = s.replace(/(^|[^\w])_(?=[^\s_])((?:[^_\n]*?[^\s_])?)_(?!\w)/g, '$1<em>$2</em>');
    return s.replace(/~~(?=\S)([\s\S]*?\S)~~/g, '<del>$1</del>');
  }

  function Renderer(opts) {
    this.refCount = (opts && opts.refCount) || 0;
    this.refPrefix = (opts && opts.refPrefix) || 'ref';
  }

  // inline renders one block's text. Code spans, links and bare URLs are
  // taken out of the raw text first and held as finished HTML (their text
  // escaped); the rest is escaped, then marked up; then the held pieces
  // are put back.
  Renderer.prototype.inline = function (text) {
    var self = this;
    var slots = [];
    function hold(html) { slots.push(html); return '\u0000' + (slots.length - 1) + '\u0000'; }
    var s = String(text).replace(/\u0000/g, '');
    s = s.replace(/(`+)([^`][\s\S]*?)\1(?!`)/g, function (m, ticks, code) {
      return hold('<code>' + escapeHTML(code) + '</code>');
    });
    s = s.replace(/\[([^\]\n]+)\]\(\s*([^()\s]+)(?:\s+"[^"\n]*")?\s*\)/g, function (m, label, url) {
      // A code span binds tighter than a link: [x](`y`) is text and code,
      // not a link whose href would be the code's HTML.
      if (url.indexOf('\u0000') >= 0) return m;
      var href = safeHref(url);
      var inner = emphasis(escapeHTML(label));
      return href === null ? hold(inner) : hold(anchor(href, inner));
    });
    s = s.replace(/(^|[\s(])(https?:\/\/[^\s<>\u0000]*[^\s<>\u0000.,;:!?)\]'"*_])/g, function (m, pre, url) {
      return pre + hold(anchor(safeHref(url), escapeHTML(url)));
    });
    s = escapeHTML(s);
    s = s.replace(/\[(\d{1,4})\]/g, function (m, n) {
      var i = parseInt(n, 10);
      if (i < 1 || i > self.refCount) return m;
      return hold('<a class="cite" href="#' + self.refPrefix + '-' + i + '" data-ref="' + i + '">[' + i + ']</a>');
    });
    s = emphasis(s);
    while (/\u0000\d+\u0000/.test(s)) {
      s = s.replace(/\u0000(\d+)\u0000/g, function (m, i) { return slots[+i]; });
    }
    return s;
  };

  var FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.\-]*)/;
  var HEADING = /^ {0,3}(#{1,6})(?:\s+(.*?))?\s*$/;
  var RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
  var LIST = /^( *)([-*+]|\d{1,9}[.)])(\s+(.*))?$/;
  var TABLE_SEP = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

  function blank(line) { return /^\s*$/.test(line); }

  // listItem matches a list item line (a marker, a space, text).
  function listItem(line) {
    var m = LIST.exec(line);
    return m && m[4] !== undefined && !RULE.test(line) ? m : null;
  }

  Renderer.prototype.startsBlock = function (line) {
    return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || /^ {0,3}>/.test(line) || !!listItem(line);
  };

  // MAX_DEPTH bounds how deeply block quotes and lists nest. Deeper
  // levels are shown as their text: rendering recurses once per level, and
  // an answer of thousands of ">" must not exhaust the stack (which would
  // stop this and every later message from rendering).
  var MAX_DEPTH = 32;

  // plainBlock shows lines as escaped text, line breaks kept.
  function plainBlock(lines) {
    var text = lines.join('\n').trim();
    return text ? '<p>' + escapeHTML(text).replace(/\n/g, '<br>') + '</p>' : '';
  }

  // blocks renders lines of Markdown to HTML; depth is how many quotes
  // and list items enclose them.
  Renderer.prototype.blocks = function (lines, depth) {
    depth = depth || 0;
    if (depth >= MAX_DEPTH) return plainBlock(lines);
    var out = [];
    var i = 0;
    var m;
    while (i < lines.length) {
      var line = lines[i];
      if (blank(line)) { i++; continue; }
      if ((m = FENCE.exec(line))) {
        var fence = m[1];
        var close = new RegExp('^ {0,3}' + (fence[0] === '`' ? '`' : '~') + '{' + fence.length + ',}\\s*$');
        var body = [];
        for (i++; i < lines.length && !close.test(lines[i]); i++) body.push(lines[i]);
        i++;
        var cls = m[2] ? ' class="language-' + escapeHTML(m[2]) + '"' : '';
        out.push('<pre><code' + cls + '>' + escapeHTML(body.join('\n')) + '</code></pre>');
        continue;
      }
      if ((m = HEADING.exec(line))) {
        var level = m[1].length;
        var text = (m[2] || '').replace(/\s+#+$/, '');
        out.push('<h' + level + '>' + this.inline(text) + '</h' + level + '>');
        i++;
        continue;
      }
      if (RULE.test(line)) { out.push('<hr>'); i++; continue; }
      if (/^ {0,3}>/.test(line)) {
        var quoted = [];
        for (; i < lines.length && /^ {0,3}>/.test(lines[i]); i++) quoted.push(lines[i].replace(/^ {0,3}> ?/, ''));
        out.push('<blockquote>' + this.blocks(quoted, depth + 1) + '</blockquote>');
        continue;
      }
      if (listItem(line)) {
        i = this.list(lines, i, out, depth);
        continue;
      }
      if (line.indexOf('|') >= 0 && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].indexOf('-') >= 0) {
        i = this.table(lines, i, out);
        continue;
      }
      var para = [line.trim()];
      for (i++; i < lines.length && !blank(lines[i]) && !this.startsBlock(lines[i]); i++) para.push(lines[i].trim());
      out.push('<p>' + this.inline(para.join('\n')).replace(/\n/g, '<br>') + '</p>');
    }
    return out.join('');
  };

  // list renders the list starting at lines[i] and returns the next index.
  Renderer.prototype.list = function (lines, i, out, depth) {
    var first = LIST.exec(lines[i]);
    var indent = first[1].length;
    var ordered = /^\d/.test(first[2]);
    var items = [];
    var cur = null;
    while (i < lines.length) {
      var line = lines[i];
      var m = listItem(line);
      if (m && m[1].length === indent && /^\d/.test(m[2]) === ordered) {
        cur = { first: m[4], rest: [], pad: indent + m[2].length + 1, start: parseInt(m[2], 10) };
        items.push(cur);
        i++;
        continue;
      }
      if (blank(line)) {
        var j = i + 1;
        while (j < lines.length && blank(lines[j])) j++;
        if (j < lines.length && /^\s+\S/.test(lines[j]) && (lines[j].match(/^ */)[0].length > indent)) {
          for (; i < j; i++) cur.rest.push('');
          continue;
        }
        var next = j < lines.length ? listItem(lines[j]) : null;
        if (next && next[1].length === indent && /^\d/.test(next[2]) === ordered) { i = j; continue; }
        break;
      }
      var lead = line.match(/^ */)[0].length;
      if (lead > indent) {
        cur.rest.push(line.slice(Math.min(lead, cur.pad)));
        i++;
        continue;
      }
      if (m || this.startsBlock(line)) break;
      cur.rest.push(line.trim()); // lazy continuation of the item's text
      i++;
    }
    var html = [];
    for (var k = 0; k < items.length; k++) {
      var it = items[k];
      var textLines = [it.first];
      var r = 0;
      while (r < it.rest.length && !blank(it.rest[r]) && !this.startsBlock(it.rest[r])) textLines.push(it.rest[r++].trim());
      html.push('<li>' + this.inline(textLines.join('\n')).replace(/\n/g, '<br>') + this.blocks(it.rest.slice(r), depth + 1) + '</li>');
    }
    var tag = ordered ? 'ol' : 'ul';
    var start = ordered && items[0].start !== 1 ? ' start="' + items[0].start + '"' : '';
    out.push('<' + tag + start + '>' + html.join('') + '</' + tag + '>');
    return i;
  };

  function cells(line) {
    var s = line.trim().replace(/^\|/, '').replace(/\|$/, '');
    return s.split('|').map(function (c) { return c.trim(); });
  }

  Renderer.prototype.table = function (lines, i, out) {
    var head = cells(lines[i]);
    var self = this;
    var rows = [];
    for (i += 2; i < lines.length && !blank(lines[i]) && lines[i].indexOf('|') >= 0; i++) rows.push(cells(lines[i]));
    var h = '<table><thead><tr>' + head.map(function (c) { return '<th>' + self.inline(c) + '</th>'; }).join('') + '</tr></thead><tbody>';
    rows.forEach(function (r) {
      h += '<tr>' + head.map(function (_, k) { return '<td>' + self.inline(r[k] || '') + '</td>'; }).join('') + '</tr>';
    });
    out.push('<div class="table-wrap">' + h + '</tbody></table></div>');
    return i;
  };

  // render turns Markdown source into HTML. opts.refCount is how many
  // references the answer has ([n] beyond it stays text); opts.refPrefix
  // starts the ids the markers link to (#<prefix>-<n>).
  //
  // Whatever the source, it returns HTML: should rendering ever fail, the
  // text is shown as it is rather than the answer (and the ones after it)
  // not at all.
  function render(src, opts) {
    var lines = String(src || '').replace(/\r\n?/g, '\n').split('\n');
    try {
      return new Renderer(opts).blocks(lines, 0);
    } catch (e) {
      return plainBlock(lines);
    }
  }

  global.ChatpipeMarkdown = { render: render, escapeHTML: escapeHTML };
})(window);
