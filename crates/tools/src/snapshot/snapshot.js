// tabgate snapshot script. Evaluated by tabgate inside each frame's isolated world
// (Page.createIsolatedWorld + Runtime.evaluate{contextId, returnByValue:true}) as
// `<this file>; globalThis.__tabgate.snapshot({full:false})` (or another call below).
// Plain script, no modules. Installs globalThis.__tabgate once per document (idempotent:
// a second evaluation with the same version keeps the existing object and its id map).
// Contract: README.md next to this file.
(function () {
  'use strict';
  var VERSION = '1';
  var G = globalThis;
  if (G.__tabgate && G.__tabgate.version === VERSION) return;

  // ---------------------------------------------------------------- ids
  var ids = new WeakMap();   // element -> id
  var refs = new Map();      // id -> WeakRef(element)
  var nextId = 1;
  var adopted = new WeakMap(); // host -> closed ShadowRoot (from adoptRoot)
  var nAdopted = 0;
  var checked = new WeakSet(); // hosts already asked about (closedHosts skips them)

  function token() {
    var a = new Uint8Array(8), s = '';
    if (G.crypto && G.crypto.getRandomValues) G.crypto.getRandomValues(a);
    else for (var i = 0; i < 8; i++) a[i] = Math.floor(Math.random() * 256);
    for (var j = 0; j < 8; j++) s += (a[j] < 16 ? '0' : '') + a[j].toString(16);
    return s;
  }
  var DOC = token();

  // ---------------------------------------------------------------- click effects
  // Which clicks and submits since the last point() lead to a navigation or a download
  // (a link, an <a download> a handler creates and clicks, a form submit), read after
  // dispatch so a handler's preventDefault counts. Tells browser_click to wait for them.
  var seen = null;
  function watch(e) {
    if (!seen || seen.length >= 20) return;
    // the link is found now: composedPath() is empty once dispatch is over
    var a = null;
    if (e.type === 'click') {
      var path = e.composedPath ? e.composedPath() : [e.target];
      for (var i = 0; i < path.length && !a; i++) if (path[i] && path[i].localName === 'a' && path[i].href) a = path[i];
      if (!a) return;
    }
    seen.push({ e: e, a: a });
  }
  G.addEventListener('click', watch, true);
  G.addEventListener('submit', watch, true);
  function clickEffects() {
    var out = { navigation: false, download: false }, here = location.href.split('#')[0];
    (seen || []).forEach(function (s) {
      var e = s.e, n = s.a;
      if (e.defaultPrevented) return;
      if (e.type === 'submit') {
        var f = e.target;
        if (f && (!f.target || f.target === '_self')) out.navigation = true;
      } else if (n.hasAttribute('download')) out.download = true;
      else if ((!n.target || n.target === '_self') && !/^javascript:/i.test(n.href) &&
               n.href.split('#')[0] !== here) out.navigation = true;
    });
    seen = null;
    return out;
  }

  function idOf(el) {
    var id = ids.get(el);
    if (!id) {
      id = nextId++;
      ids.set(el, id);
      refs.set(id, new WeakRef(el));
    }
    return id;
  }
  function byId(id) {
    var r = refs.get(+id);
    if (!r) return null;
    var el = r.deref();
    if (!el) { refs.delete(+id); return null; }
    return el;
  }
  var sweepAt = 4096;
  function sweep() {
    // drop entries of collected elements once the map has grown
    if (refs.size <= sweepAt) return;
    refs.forEach(function (r, id) { if (!r.deref()) refs.delete(id); });
    sweepAt = Math.max(4096, refs.size * 2);
  }

  // ---------------------------------------------------------------- tables
  function set(s) {
    var o = Object.create(null);
    s.split(' ').forEach(function (k) { if (k) o[k] = 1; });
    return o;
  }
  // Never walked (nor their subtree).
  var SKIP = set('script style template noscript head title meta link base datalist param source track wbr map area object embed');
  // Walked as a node, but their children are fallback content.
  var LEAF = set('canvas video audio svg math img input textarea progress meter');
  // Inline formatting elements: text across their boundaries merges into one text line.
  var INLINE = set('a abbr b bdi bdo big cite code data del dfn em font i img ins kbd label mark nobr q rp rt ruby s samp small span strong sub sup time tt u var br slot');
  var INTERACTIVE = set('link button textbox searchbox checkbox radio combobox listbox option slider spinbutton switch tab menuitem menuitemcheckbox menuitemradio treeitem');
  // Roles whose name comes from their content (accname "name from content").
  var NFC = set('button link heading tab menuitem menuitemcheckbox menuitemradio option cell gridcell columnheader rowheader checkbox radio switch treeitem tooltip');
  // Roles kept even without a name when pruning.
  var KEEP = set('heading table grid treegrid row cell gridcell columnheader rowheader navigation main banner contentinfo complementary search dialog alertdialog article tablist tabpanel menu menubar tree toolbar radiogroup alert');
  // Roles never kept (unless full), whatever their name.
  var DROP = set('none presentation paragraph rowgroup term definition separator caption legend strong emphasis code subscript superscript insertion deletion time mark');
  var TEXTY = set('textbox searchbox combobox spinbutton');
  // Focusable containers whose items are targets of their own.
  var COMPOSITE = set('list listbox menu menubar tree treegrid grid table rowgroup tablist radiogroup toolbar group directory feed');
  var EDITABLE_INPUT = set('text search email url tel password number date datetime-local month week time');
  // A selector for "probably contains something interactive" (pre-check for table cells).
  var Q_INTER = 'a[href],button,input:not([type=hidden]),select,textarea,[tabindex],[role],[contenteditable],[onclick],iframe,summary';
  // Real controls (native or ARIA): a clickable wrapper holding one is not a target itself.
  var Q_CONTROL = 'a[href],button,input:not([type=hidden]),select,textarea,summary,[contenteditable=""],[contenteditable=true],' +
    '[role=button],[role=link],[role=menuitem],[role=menuitemcheckbox],[role=menuitemradio],[role=option],[role=tab],' +
    '[role=checkbox],[role=radio],[role=switch],[role=treeitem],[role=textbox],[role=combobox],[role=searchbox],[role=slider]';
  var CV = { visibilityProperty: true };
  var NAME_CAP = 120, TEXT_CAP = 200, TEXT_CAP_FULL = 2000, VALUE_CAP = 80;

  function clean(s) { return s ? String(s).replace(/\s+/g, ' ').trim() : ''; }
  function cap(s, n) { return s.length > n ? s.slice(0, n - 1) + '\u2026' : s; }
  function attrVal(s) { return cap(clean(s), VALUE_CAP).replace(/\\/g, '\\\\').replace(/"/g, '\\"'); }

  // ---------------------------------------------------------------- composed tree
  function shadowOf(el) {
    var sr = el.shadowRoot;
    if (sr) return sr;
    return nAdopted ? (adopted.get(el) || null) : null;
  }
  // Children in the flat tree. Returns an array for the special cases (slot with assigned
  // nodes, closed <details>), otherwise the node whose firstChild/nextSibling chain to walk
  // (the shadow root for a host, the node itself otherwise).
  function kidsOf(n) {
    if (n.nodeType === 1) {
      var sr = shadowOf(n);
      if (sr) return sr;
      var t = n.localName;
      if (t === 'slot' && n.assignedNodes) {
        var a = n.assignedNodes();
        if (a.length) return a;
      } else if (t === 'details' && !n.open) {
        // only the summary of a closed <details> is rendered
        for (var c = n.firstElementChild; c; c = c.nextElementSibling) if (c.localName === 'summary') return [c];
        return [];
      }
    }
    return n;
  }
  function composedParent(n) {
    if (n.assignedSlot) return n.assignedSlot;
    var p = n.parentNode;
    if (p && p.nodeType === 11 && p.host) return p.host;
    return p;
  }
  function composedContains(anc, n) {
    for (; n; n = n.parentNode || n.host) if (n === anc) return true;
    return false;
  }

  // ---------------------------------------------------------------- visibility
  // Checked top-down with one getComputedStyle per visited element (as cheap as
  // checkVisibility and it also gives the cursor); a display:none element stops the walk.
  // 0: not rendered (skip subtree); 1: rendered; 2: own box hidden (visibility:hidden),
  // children may still show; 3: display:contents (no box, children render, text visible);
  // 4: rendered but content-visibility:hidden (children skipped).
  var visCache = null;  // element -> state | 8 when its cursor is pointer (filled by gather)
  var lastCursor = '';  // 'pointer' or '' for the element last passed to vis()
  function vis(el) {
    var v = visCache ? visCache.get(el) : undefined;
    if (v === undefined) {
      var cs = getComputedStyle(el), d = cs.display;
      if (d === 'none') v = 0;
      else {
        if (cs.visibility !== 'visible') v = 2;
        else if (d === 'contents') v = 3;
        else if (el.hasAttribute('hidden') && cs.contentVisibility === 'hidden') v = 4;
        else v = 1;
        if (cs.cursor === 'pointer') v |= 8;
      }
    }
    lastCursor = v & 8 ? 'pointer' : '';
    return v & 7;
  }
  function visCached(el) {
    var v = visCache.get(el);
    if (v === undefined) {
      v = vis(el);
      visCache.set(el, lastCursor ? v | 8 : v);
      return v;
    }
    lastCursor = v & 8 ? 'pointer' : '';
    return v & 7;
  }
  // Outside a snapshot walk (ancestors not known to be visible): the full check.
  function visibleNow(el) {
    if (el.checkVisibility) return el.checkVisibility(CV);
    return el.getClientRects().length > 0;
  }
  function area(r) { return r.width > 0 && r.height > 0; }
  // An element with a zero-size box whose subtree is all zero-size is invisible.
  function zeroSize(el) {
    if (area(el.getBoundingClientRect())) return false;
    var all = el.getElementsByTagName('*');
    for (var i = 0; i < all.length && i < 200; i++) if (area(all[i].getBoundingClientRect())) return false;
    var sr = shadowOf(el);
    if (sr) {
      all = sr.querySelectorAll('*');
      for (i = 0; i < all.length && i < 200; i++) if (area(all[i].getBoundingClientRect())) return false;
    }
    return true;
  }
  // Worth measuring: form controls, frames and elements without content (an empty <a>).
  var MEASURE = set('input select textarea iframe frame');
  function mayBeZero(el, tag) {
    if (MEASURE[tag]) return true;
    for (var c = el.firstChild; c; c = c.nextSibling) {
      if (c.nodeType === 1 || (c.nodeType === 3 && c.data.trim())) return false;
    }
    return !shadowOf(el);
  }
  function rendered(el) {
    if (el.getAttribute('aria-hidden') === 'true') return false;
    if (!el.isConnected) return false;
    var cs = getComputedStyle(el);
    if (cs.display === 'contents') return cs.visibility === 'visible';
    return visibleNow(el) && !zeroSize(el);
  }

  // ---------------------------------------------------------------- roles
  function sectioned(el) {
    var p = el.parentElement;
    return !!(p && p.closest('article,aside,main,nav,section'));
  }
  function inputRole(el) {
    switch (el.type) {
      case 'hidden': return '';
      case 'button': case 'submit': case 'reset': case 'image': case 'file': case 'color': return 'button';
      case 'checkbox': return el.hasAttribute('switch') ? 'switch' : 'checkbox';
      case 'radio': return 'radio';
      case 'range': return 'slider';
      case 'number': return 'spinbutton';
      case 'search': return el.hasAttribute('list') ? 'combobox' : 'searchbox';
      default: return el.hasAttribute('list') ? 'combobox' : 'textbox';
    }
  }
  function implicitRole(el, tag) {
    switch (tag) {
      case 'a': return el.hasAttribute('href') ? 'link' : 'generic';
      case 'button': return 'button';
      case 'input': return inputRole(el);
      case 'select': return (el.multiple || el.size > 1) ? 'listbox' : 'combobox';
      case 'textarea': return 'textbox';
      case 'option': return 'option';
      case 'optgroup': return 'group';
      case 'h1': case 'h2': case 'h3': case 'h4': case 'h5': case 'h6': return 'heading';
      case 'img': return (el.getAttribute('alt') === '' && !el.hasAttribute('aria-label')) ? 'none' : 'img';
      case 'svg': return 'img';
      case 'ul': case 'ol': case 'menu': return 'list';
      case 'li': return 'listitem';
      case 'table': return 'table';
      case 'thead': case 'tbody': case 'tfoot': return 'rowgroup';
      case 'tr': return 'row';
      case 'td': return 'cell';
      case 'th': {
        var sc = el.getAttribute('scope');
        return (sc === 'row' || sc === 'rowgroup') ? 'rowheader' : 'columnheader';
      }
      case 'caption': return 'caption';
      case 'nav': return 'navigation';
      case 'main': return 'main';
      case 'aside': return 'complementary';
      case 'search': return 'search';
      case 'header': return sectioned(el) ? 'generic' : 'banner';
      case 'footer': return sectioned(el) ? 'generic' : 'contentinfo';
      case 'section': return 'region';
      case 'form': return 'form';
      case 'article': return 'article';
      case 'dialog': return 'dialog';
      case 'details': case 'fieldset': case 'hgroup': case 'address': return 'group';
      case 'summary': return 'button';
      case 'legend': return 'legend';
      case 'figure': return 'figure';
      case 'progress': return 'progressbar';
      case 'meter': return 'meter';
      case 'output': return 'status';
      case 'p': return 'paragraph';
      case 'blockquote': return 'blockquote';
      case 'hr': return 'separator';
      case 'dt': return 'term';
      case 'dd': return 'definition';
      case 'iframe': case 'frame': return 'iframe';
      case 'math': return 'math';
      case 'strong': case 'b': return 'generic';
    }
    return 'generic';
  }
  var NATIVE_FOCUSABLE = set('a button input select textarea summary iframe');
  function roleOf(el, tag, hasAttrs) {
    var r = hasAttrs === false ? null : el.getAttribute('role');
    if (r) {
      r = r.trim().toLowerCase().split(/\s+/)[0];
      if (r === 'presentation') r = 'none';
      // presentational role conflict: focusable native elements keep their role
      if (r && !(r === 'none' && NATIVE_FOCUSABLE[tag])) return r;
    }
    return implicitRole(el, tag);
  }
  function editingHost(el) {
    var a = el.getAttribute('contenteditable');
    if (a === null || a === 'false') return false;
    if (!el.isContentEditable) return false;
    var p = composedParent(el);
    return !(p && p.nodeType === 1 && p.isContentEditable);
  }

  // ---------------------------------------------------------------- names
  var curSkip = null; // Set of elements used as a name source (legend/caption) in this snapshot

  function rootById(el, id) {
    var root = el.getRootNode ? el.getRootNode() : document;
    var t = root.getElementById ? root.getElementById(id) : null;
    if (!t && root !== document) t = document.getElementById(id);
    return t;
  }
  function idrefsText(el, list) {
    var out = [], parts = list.trim().split(/\s+/);
    for (var i = 0; i < parts.length; i++) {
      var t = rootById(el, parts[i]);
      if (!t) continue;
      var al = t.getAttribute('aria-label');
      if (al && al.trim()) { out.push(al); continue; }
      out.push(contentText(t, null, true));
    }
    return clean(out.join(' '));
  }
  function svgTitle(el) {
    for (var c = el.firstElementChild; c; c = c.nextElementSibling) {
      if (c.localName === 'title') return clean(c.textContent);
    }
    return '';
  }
  function selectedLabels(sel) {
    var out = [], o = sel.selectedOptions;
    for (var i = 0; i < o.length; i++) out.push(clean(o[i].label || o[i].text));
    return out;
  }
  function inputText(el) {
    var t = el.type;
    if (t === 'button' || t === 'submit' || t === 'reset') return el.value || (t === 'submit' ? 'Submit' : t === 'reset' ? 'Reset' : '');
    if (t === 'image') return el.getAttribute('alt') || el.value || '';
    if (t === 'checkbox' || t === 'radio' || t === 'hidden' || t === 'password' || t === 'file') return '';
    return el.value;
  }
  // Text alternative of a subtree (name from content), whitespace-collapsed.
  // skip: element to leave out (the control a label names); hiddenToo: include hidden
  // content (aria-labelledby targets).
  function contentText(el, skip, hiddenToo) {
    // fast path: only text children (most table cells, links, buttons)
    if (!el.firstElementChild && el.localName !== 'slot' && !shadowOf(el)) return clean(el.textContent);
    var out = [];
    out.len = 0;
    gather(el, out, skip, !!hiddenToo, true);
    return clean(out.join(''));
  }
  function gather(n, out, skip, hiddenToo, textOk) {
    var k = kidsOf(n);
    if (Array.isArray(k)) {
      for (var i = 0; i < k.length; i++) gather1(k[i], out, skip, hiddenToo, textOk);
    } else {
      for (var c = k.firstChild; c; c = c.nextSibling) gather1(c, out, skip, hiddenToo, textOk);
    }
  }
  function gather1(c, out, skip, hiddenToo, textOk) {
    if (out.len > 1000) return;
    var nt = c.nodeType;
    if (nt === 3) {
      if (textOk) { out.push(c.data); out.len += c.data.length; }
      return;
    }
    if (nt !== 1 || c === skip) return;
    var tag = c.localName;
    if (SKIP[tag]) return;
    if (!hiddenToo && c.getAttribute('aria-hidden') === 'true') return;
    var v = 1;
    if (!hiddenToo) { v = visCache ? visCached(c) : vis(c); if (v === 0) return; }
    var block = !INLINE[tag];
    if (block) out.push(' ');
    var al = c.getAttribute('aria-label');
    var s = null;
    if (al && al.trim()) s = al;
    else if (tag === 'img') s = c.getAttribute('alt') || '';
    else if (tag === 'input') s = inputText(c);
    else if (tag === 'textarea') s = c.value;
    else if (tag === 'select') s = selectedLabels(c).join(' ');
    else if (tag === 'svg') s = svgTitle(c);
    else if (tag === 'br') s = ' ';
    if (s !== null) {
      if (v !== 2 || hiddenToo) { out.push(s); out.len += s.length; }
    } else if (v !== 4 || hiddenToo) {
      gather(c, out, skip, hiddenToo, v !== 2);
    }
    if (block) out.push(' ');
  }
  function labelsText(el) {
    var ls = el.labels;
    if (!ls || !ls.length) return '';
    var out = [];
    for (var i = 0; i < ls.length; i++) out.push(contentText(ls[i], el, false));
    return clean(out.join(' '));
  }
  function firstChildTag(el, tag) {
    for (var c = el.firstElementChild; c; c = c.nextElementSibling) if (c.localName === tag) return c;
    return null;
  }
  function nativeName(el, tag) {
    var c;
    switch (tag) {
      case 'input': {
        var t = el.type;
        if (t === 'button' || t === 'submit' || t === 'reset') return clean(inputText(el)) || labelsText(el);
        if (t === 'image') return clean(el.getAttribute('alt') || el.value || '') || 'Submit';
        return labelsText(el);
      }
      case 'textarea': case 'select': case 'meter': case 'progress': case 'output':
        return labelsText(el);
      case 'img':
        return clean(el.getAttribute('alt'));
      case 'svg':
        return svgTitle(el);
      case 'fieldset':
        c = firstChildTag(el, 'legend');
        break;
      case 'table':
        c = firstChildTag(el, 'caption');
        break;
      case 'figure':
        c = firstChildTag(el, 'figcaption');
        break;
    }
    if (c) {
      var s = contentText(c, null, false);
      if (s && curSkip) curSkip.add(c);
      return s;
    }
    return '';
  }
  // The text of a clickable item without its nested lists (a tree folder's own label).
  var LISTISH = set('ul ol menu');
  function ownText(el) {
    var out = [];
    for (var c = el.firstChild; c; c = c.nextSibling) {
      if (c.nodeType === 3) out.push(c.data);
      else if (c.nodeType === 1 && !LISTISH[c.localName] && !SKIP[c.localName] && vis(c) !== 0) out.push(' ' + contentText(c, null, false) + ' ');
    }
    return clean(out.join(''));
  }
  // Last resort for an unnamed button or link: the name its icon carries (an image file
  // name, an svg <use> symbol, an icon font class such as fa-trash or ui-icon-closethick).
  var ICON_CLASS = /(?:^|\s)(?:fa|bi|icon|glyphicon|ui-icon|mdi|ti|gg|octicon|material-icons)-([a-z0-9-]+)/i;
  function iconName(el) {
    var list = el.querySelectorAll('img,svg use,[class]');
    for (var i = 0; i < list.length && i < 20; i++) {
      var e = list[i], s = '';
      if (e.localName === 'img') s = (e.getAttribute('src') || '').split(/[?#]/)[0].split('/').pop().replace(/\.[a-z0-9]+$/i, '');
      else if (e.localName === 'use') s = (e.getAttribute('href') || e.getAttribute('xlink:href') || '').split('#').pop();
      if (!s) { var m = ICON_CLASS.exec(typeof e.className === 'string' ? e.className : ''); if (m) s = m[1]; }
      s = clean(s.replace(/^(?:icon|ic|fa|bi)[-_]/i, '').replace(/[-_]+/g, ' '));
      if (s && !/^(solid|regular|light|fw|lg|sm|xs|\d+x|data:.*)$/i.test(s)) return s;
    }
    var own = ICON_CLASS.exec(typeof el.className === 'string' ? el.className : '');
    return own ? clean(own[1].replace(/[-_]+/g, ' ')) : '';
  }

  // Name from author attributes only (for generic wrappers).
  function ariaName(el) {
    var v = el.getAttribute('aria-labelledby');
    var n = v ? idrefsText(el, v) : '';
    if (!n) n = clean(el.getAttribute('aria-label'));
    return n;
  }
  // Accessible name (compact accname 1.2). content: allow name from content.
  function nameOf(el, tag, role, content) {
    var n = ariaName(el);
    if (!n) n = nativeName(el, tag);
    if (!n && content && NFC[role]) n = contentText(el, null, false);
    if (!n) n = clean(el.getAttribute('title'));
    if (!n && TEXTY[role]) n = clean(el.getAttribute('placeholder') || el.getAttribute('aria-placeholder'));
    if (!n && (role === 'button' || role === 'link')) n = iconName(el);
    return cap(n, NAME_CAP);
  }

  // ---------------------------------------------------------------- attributes
  function isFormCtl(tag) {
    return tag === 'input' || tag === 'button' || tag === 'select' || tag === 'textarea' || tag === 'option' || tag === 'optgroup' || tag === 'fieldset';
  }
  function valueOf(el, tag) {
    if (tag === 'input' || tag === 'textarea') return el.value;
    if (tag === 'select') return selectedLabels(el).join(', ');
    if (editingHost(el)) return el.innerText;
    return null;
  }
  function attrsOf(el, tag, role, ctl, pointer, full) {
    // ctl: element whose state is described (el itself, or the hidden control of a label)
    var a = '', v;
    var ctag = ctl.localName;
    if (role === 'heading') {
      v = /^h[1-6]$/.test(tag) ? +tag[1] : +(el.getAttribute('aria-level') || 2);
      a += ' [level=' + v + ']';
    }
    if (ctag === 'input' && (ctl.type === 'checkbox' || ctl.type === 'radio')) {
      if (ctl.indeterminate) a += ' [checked=mixed]';
      else if (ctl.checked) a += ' [checked]';
    } else if ((v = ctl.getAttribute('aria-checked'))) {
      if (v === 'true') a += ' [checked]';
      else if (v === 'mixed') a += ' [checked=mixed]';
    }
    if ((isFormCtl(ctag) && ctl.matches(':disabled')) || ctl.getAttribute('aria-disabled') === 'true') a += ' [disabled]';
    if ((v = ctl.getAttribute('aria-expanded'))) a += v === 'true' ? ' [expanded]' : ' [expanded=false]';
    else if (ctag === 'summary' && ctl.parentElement && ctl.parentElement.localName === 'details') a += ctl.parentElement.open ? ' [expanded]' : ' [expanded=false]';
    if (ctag === 'option' ? ctl.selected : ctl.getAttribute('aria-selected') === 'true') a += ' [selected]';
    if ((v = ctl.getAttribute('aria-pressed'))) { if (v === 'true') a += ' [pressed]'; else if (v === 'mixed') a += ' [pressed=mixed]'; }
    if (TEXTY[role] || role === 'slider' || ctag === 'textarea' || (ctag === 'input' && role === 'textbox')) {
      if (ctag === 'input' && ctl.type === 'password') { if (ctl.value) a += ' [value=\u2022\u2022\u2022]'; }
      else {
        v = valueOf(ctl, ctag);
        if (v === null && (role === 'slider' || role === 'spinbutton')) v = ctl.getAttribute('aria-valuetext') || ctl.getAttribute('aria-valuenow');
        if (v) a += ' [value="' + attrVal(v) + '"]';
      }
    } else if (ctag === 'select') {
      v = valueOf(ctl, ctag);
      if (v && role === 'combobox') a += ' [value="' + attrVal(v) + '"]';
    }
    if (role === 'textbox' && (ctag === 'textarea' || ctl.getAttribute('aria-multiline') === 'true')) a += ' [multiline]';
    if (ctl.required || ctl.getAttribute('aria-required') === 'true') a += ' [required]';
    if (((ctag === 'input' || ctag === 'textarea') && ctl.readOnly && TEXTY[role]) || ctl.getAttribute('aria-readonly') === 'true') a += ' [readonly]';
    if (pointer) a += ' [cursor=pointer]';
    if (full && role === 'link' && el.href) a += ' [url=' + el.href + ']';
    return a;
  }

  // ---------------------------------------------------------------- walk
  var TEXT = 1, REFS = 2, INTER = 4;
  var S = null; // current snapshot state

  function flush() {
    if (!S.pend.length) return;
    var s = clean(S.pend.join(''));
    S.pend.length = 0;
    // a text line carries the negated id of the element holding its first text (for find)
    var p = S.pendEl;
    S.pendEl = null;
    if (s) S.lines.push([S.pendDepth, 'text', cap(s, S.full ? TEXT_CAP_FULL : TEXT_CAP), '', p ? -idOf(p) : 0]);
  }
  function walkKids(n, depth, mode, pcur) {
    var k = kidsOf(n), c;
    if (Array.isArray(k)) {
      for (var i = 0; i < k.length; i++) walkNode(k[i], depth, mode, pcur);
    } else {
      for (c = k.firstChild; c; c = c.nextSibling) walkNode(c, depth, mode, pcur);
    }
  }
  function walkNode(c, depth, mode, pcur) {
    var nt = c.nodeType;
    if (nt === 3) {
      if ((mode & (TEXT | REFS)) === TEXT) {
        if (S.pendDepth !== depth) { flush(); S.pendDepth = depth; }
        if (!S.pendEl && c.data.trim()) { var tp = c.parentNode; S.pendEl = tp && tp.nodeType === 1 ? tp : (tp && tp.host) || null; }
        S.pend.push(c.data);
      }
    } else if (nt === 1) walkEl(c, depth, mode, pcur);
  }
  function emit(depth, role, name, attrs, id) {
    flush();
    var l = [depth, role, name, attrs, id];
    S.lines.push(l);
    return l;
  }
  function tabbable(el) {
    return el.hasAttribute('tabindex') && el.tabIndex >= 0;
  }
  function isCell(c) {
    var t = c.localName;
    if (t === 'td' || t === 'th') return !c.hasAttribute('role') || /^(cell|gridcell|columnheader|rowheader)\b/.test(c.getAttribute('role'));
    var r = c.getAttribute('role');
    return !!r && /^(cell|gridcell|columnheader|rowheader)\b/.test(r);
  }

  function walkEl(el, depth, mode, pcur) {
    var tag = el.localName;
    if (SKIP[tag]) return;
    // most elements carry no attribute at all: skip every attribute look-up for them
    var A = el.hasAttributes();
    if (A && el.getAttribute('aria-hidden') === 'true') return;
    if (curSkip.size && curSkip.has(el)) return;
    var vs = vis(el);
    if (vs === 0) return;
    var cur = vs === 3 ? pcur : lastCursor;
    var full = S.full;
    var block = !INLINE[tag];
    if (block) flush();
    var cmode = vs === 2 ? (mode & ~TEXT) : (mode | TEXT);
    var leaf = LEAF[tag] === 1 || vs === 4;

    if (tag === 'iframe' || tag === 'frame') {
      if (vs !== 1 || zeroSize(el)) return;
      var fid = idOf(el);
      flush();
      S.lines.push([depth, 'iframe', nameOf(el, tag, 'iframe', false), '', fid, 1]);
      S.owners.push(fid);
      S.nInter++;
      return;
    }
    if (tag === 'svg' && !(A && (el.hasAttribute('tabindex') || el.hasAttribute('role')))) {
      // graphics: only a named svg says something
      if (vs !== 1 || (mode & REFS)) return;
      var sn = nameOf(el, tag, 'img', false);
      if (sn || full) emit(depth, 'img', sn, '', full ? idOf(el) : 0);
      return;
    }

    var role = roleOf(el, tag, A);
    if (!role) return; // input[type=hidden]

    if (tag === 'label' && !(mode & REFS)) {
      var ctl = el.control;
      if (ctl && ctl !== el) {
        if (rendered(ctl)) {
          // the control carries this text as its name: only walk for nested interactive elements
          if (!leaf) walkKids(el, depth, cmode | REFS, cur);
          if (block) flush();
          return;
        }
        if (vs === 1 && !zeroSize(el)) {
          // a visually hidden control (custom checkbox): the label stands in for it
          var crole = roleOf(ctl, ctl.localName) || 'generic';
          var ln = ariaName(ctl) || contentText(el, ctl, false);
          emit(depth, crole, cap(ln, NAME_CAP), attrsOf(el, tag, crole, ctl, false, full), idOf(el));
          S.nInter++;
          walkKids(el, depth + 1, cmode | REFS | INTER, cur);
          return;
        }
      }
    }

    if (tag === 'select') { selectLines(el, depth, role, vs); return; }

    var ce = A && editingHost(el);
    if (ce && !el.hasAttribute('role')) role = 'textbox';
    var inter = !!(INTERACTIVE[role] || ce || (A && tabbable(el)));
    var pointer = false;
    // what a person can click: a pointer cursor that starts here (or on a list item: each
    // item of a clickable list is its own target), an onclick attribute, a popup trigger
    if (!inter && !(mode & (INTER | REFS)) && vs === 1 && tag !== 'label' && tag !== 'body' && tag !== 'html' &&
        ((cur === 'pointer' && (pcur !== 'pointer' || tag === 'li')) ||
         (A && (el.hasAttribute('onclick') || /^(true|menu|listbox|tree|grid|dialog)$/.test(el.getAttribute('aria-haspopup') || '')))) &&
        // a wrapper around a real control (a menu item's <li>, a card around its link) is not
        // a target of its own: the control is
        !(el.firstElementChild && el.querySelector(Q_CONTROL))) {
      pointer = inter = true;
      if (role === 'none') role = 'generic';
    }
    if (inter && vs === 1 && mayBeZero(el, tag) && zeroSize(el)) return;
    if (tag === 'summary' && !(A && el.hasAttribute('role')) && !(el.parentElement && el.parentElement.localName === 'details')) role = 'generic';

    var keep, name = '', named = false;
    if (inter || full) keep = true;
    else if (role === 'generic' || role === 'none') {
      if (role === 'generic') { name = A ? ariaName(el) : ''; named = true; }
      keep = !!name;
    } else if (KEEP[role]) keep = true;
    else if (DROP[role]) keep = false;
    else { name = nameOf(el, tag, role, false); named = true; keep = !!name; }
    // a table cell holding a link/button: hoist the content, the cell line adds nothing
    // inside a node named from its content only interactive descendants are listed
    if (keep && !inter && (mode & REFS)) keep = false;
    if (keep && !full && (role === 'cell' || role === 'gridcell') && el.childElementCount && el.querySelector(Q_INTER)) keep = false;

    if (!keep) {
      if (!leaf) walkKids(el, depth, cmode, cur);
      if (block) flush();
      return;
    }

    // elements without a ref carry their id negated: Rust gives them a ref only when it
    // must name them (a container cut short by the size budget, a find result)
    var id = (inter || full) ? idOf(el) : -idOf(el);
    var nfc = NFC[role] === 1;
    // an element clickable only by its cursor or handler is named from its content
    var genericish = role === 'generic' || role === 'none' || (pointer && !INTERACTIVE[role]);
    var shownRole = role === 'none' ? 'generic' : role;
    if (inter) S.nInter++;
    var kmode = inter ? (cmode | INTER) : cmode;

    if (pointer && !full && genericish && el.getElementsByTagName('li').length) {
      // a clickable item that holds a list of items (a tree folder): named by its own
      // text; the nested items are walked as usual and get their own refs
      // its ref aims at its label (a click there is what toggles a tree folder), and a
      // hidden nested list means it is collapsed
      var lab = null, open = null;
      for (var lc = el.firstElementChild; lc; lc = lc.nextElementSibling) {
        if (LISTISH[lc.localName]) open = open || vis(lc) !== 0;
        else if (!lab && vis(lc) === 1 && clean(lc.textContent)) lab = lc;
      }
      var ex = (open === null || el.hasAttribute('aria-expanded')) ? '' : open ? ' [expanded]' : ' [expanded=false]';
      emit(depth, shownRole, cap(ownText(el), NAME_CAP), ex + attrsOf(el, tag, role, el, pointer, full), lab ? idOf(lab) : id);
      for (var oc = el.firstChild; oc; oc = oc.nextSibling) {
        if (oc.nodeType !== 1) continue;
        if (LISTISH[oc.localName]) walkNode(oc, depth + 1, cmode & ~(INTER | REFS), cur);
        else walkNode(oc, depth + 1, kmode | REFS, cur);
      }
      return;
    }
    if (inter && (nfc || genericish)) {
      // name from content: children only for nested interactive elements
      if (!named || !name) name = nameOf(el, tag, role, true);
      if (!name && genericish) {
        var t = contentText(el, null, false);
        if (t.length <= NAME_CAP) name = t;
        else {
          emit(depth, shownRole, '', attrsOf(el, tag, role, el, pointer, full), id);
          if (!leaf) walkKids(el, depth + 1, kmode, cur);
          flush();
          return;
        }
      }
      emit(depth, shownRole, name, attrsOf(el, tag, role, el, pointer, full), id);
      if (!leaf) walkKids(el, depth + 1, kmode | REFS, cur);
      return;
    }
    if (inter) {
      // textbox, listbox, combobox, slider...: content is the value, not children text
      if (!named) name = nameOf(el, tag, role, false);
      emit(depth, role, name, attrsOf(el, tag, role, el, pointer, full), id);
      var refsOnly = (role === 'textbox' || role === 'searchbox' || ce || role === 'slider' || role === 'spinbutton');
      // a focusable list, menu or grid holds items of its own: clickable ones get refs
      if (!leaf) walkKids(el, depth + 1, refsOnly ? (kmode | REFS) : COMPOSITE[role] ? cmode : kmode, cur);
      flush();
      return;
    }
    if (role === 'row' && !full && !leaf) { rowLines(el, depth, kmode, cur, id); return; }
    if (nfc) {
      // heading, cell, columnheader...: named from content unless it holds interactive
      // elements, in which case the children are listed instead.
      var explicit = ariaName(el) || nativeName(el, tag);
      var line = emit(depth, role, cap(explicit, NAME_CAP), attrsOf(el, tag, role, el, false, full), id);
      var mark = S.lines.length, before = S.nInter;
      if (!leaf) walkKids(el, depth + 1, kmode, cur);
      if (S.nInter === before) {
        S.lines.length = mark;
        S.pend.length = 0;
        if (!explicit) line[2] = cap(contentText(el, null, false) || clean(el.getAttribute('title')), NAME_CAP);
      } else flush();
      return;
    }
    if (!named) name = nameOf(el, tag, role, false);
    if (tag === 'table' && name) {
      var capEl = firstChildTag(el, 'caption');
      if (capEl && contentText(capEl, null, false) === name) curSkip.add(capEl);
    }
    emit(depth, role, name, attrsOf(el, tag, role, el, false, full), id);
    if (!leaf) walkKids(el, depth + 1, kmode, cur);
    flush();
  }

  // A table row (compact mode): the text of its text-only cells becomes the row's name,
  // joined by " | "; cells holding interactive content are walked (and hoisted) instead.
  function rowLines(el, depth, mode, pcur, id) {
    var explicit = ariaName(el);
    var line = emit(depth, 'row', explicit, attrsOf(el, 'tr', 'row', el, false, false), id);
    var parts = [];
    var k = kidsOf(el), list = [];
    if (Array.isArray(k)) list = k;
    else for (var c = k.firstChild; c; c = c.nextSibling) list.push(c);
    for (var i = 0; i < list.length; i++) {
      var c2 = list[i];
      if (c2.nodeType === 1 && isCell(c2) && !shadowOf(c2) && !c2.hasAttribute('tabindex') &&
          !(c2.childElementCount && c2.querySelector(Q_INTER))) {
        if (c2.getAttribute('aria-hidden') === 'true') continue;
        var v = vis(c2);
        if (v === 0) continue;
        if (!(lastCursor && !pcur)) {
          var t = (v === 2 || v === 4) ? '' : ((c2.hasAttributes() && ariaName(c2)) || contentText(c2, null, false));
          if (t) parts.push(t);
          continue;
        }
        walkNode(c2, depth + 1, mode, pcur);
      } else walkNode(c2, depth + 1, mode, pcur);
    }
    flush();
    if (!explicit) line[2] = cap(parts.join(' | '), TEXT_CAP);
  }

  function selectLines(el, depth, role, vs) {
    if (vs !== 1 || zeroSize(el)) return;
    var id = idOf(el);
    S.nInter++;
    emit(depth, role, nameOf(el, 'select', role, false), attrsOf(el, 'select', role, el, false, S.full), id);
    var opts = el.options;
    for (var i = 0; i < opts.length; i++) {
      var o = opts[i];
      if (o.hidden || o.getAttribute('aria-hidden') === 'true') continue;
      var n = clean(o.getAttribute('aria-label')) || clean(o.label || o.text);
      S.lines.push([depth + 1, 'option', cap(n, NAME_CAP), attrsOf(o, 'option', 'option', o, false, false), idOf(o)]);
      S.nInter++;
    }
  }

  function snapshot(opts) {
    var full = !!(opts && opts.full);
    S = { full: full, lines: [], owners: [], pend: [], pendDepth: 0, nInter: 0, pendEl: null };
    visCache = new Map();
    curSkip = new Set();
    try {
      sweep();
      var html = document.documentElement;
      if (opts && opts.root) {
        // a subtree: the element itself at depth 0, then its content
        var r = resolve(opts.root);
        if (r.error) return r;
        var par = composedParent(r.el);
        var pc = par && par.nodeType === 1 && getComputedStyle(par).cursor === 'pointer' ? 'pointer' : '';
        if (!visibleNow(r.el) && getComputedStyle(r.el).display !== 'contents') return { error: 'not_visible' };
        walkNode(r.el, 0, TEXT, pc);
      } else if (html && vis(html) !== 0) {
        var root = document.body || html, v = root === html ? 1 : vis(root);
        // <html> and <body> are not output nodes; their text and cursor still count
        if (v !== 0 && v !== 4) walkKids(root, 0, v === 2 ? 0 : TEXT, lastCursor);
      }
      flush();
      return { doc: DOC, url: location.href, title: document.title, lines: S.lines, owners: S.owners };
    } finally {
      S = null; visCache = null; curSkip = null;
    }
  }

  // ---------------------------------------------------------------- actions
  function firstRect(el) {
    var rs = el.getClientRects();
    for (var i = 0; i < rs.length; i++) if (area(rs[i])) return rs[i];
    var b = el.getBoundingClientRect();
    return area(b) ? b : null;
  }
  function inView(r) {
    return r.left >= 0 && r.top >= 0 && r.right <= innerWidth && r.bottom <= innerHeight;
  }
  function deepHit(x, y) {
    var t = document.elementFromPoint(x, y);
    while (t) {
      var sr = shadowOf(t);
      if (!sr || !sr.elementFromPoint) break;
      var inner = sr.elementFromPoint(x, y);
      if (!inner || inner === t) break;
      t = inner;
    }
    return t;
  }
  function describe(el) {
    if (!el) return '(nothing)';
    var s = el.localName;
    if (el.id) s += '#' + el.id;
    var cl = el.classList;
    for (var i = 0; cl && i < cl.length && i < 3; i++) s += '.' + cl[i];
    return s;
  }
  function resolve(id) {
    var el = byId(id);
    if (!el) return { error: 'gone' };
    if (!el.isConnected) return { error: 'detached' };
    return { el: el };
  }
  function labelFor(t, el) {
    for (var n = t; n; n = composedParent(n)) {
      if (n.nodeType === 1 && n.localName === 'label') return n.control === el;
    }
    return false;
  }
  function point(id) {
    var r = resolve(id);
    if (r.error) return r;
    seen = [];
    var el = r.el;
    if (el.localName === 'option' || el.localName === 'optgroup') {
      var sel = el.closest('select');
      if (sel) el = sel;
    }
    var rect = firstRect(el);
    if (!rect || !inView(rect)) {
      el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
      rect = firstRect(el);
    }
    if (!rect) return { error: 'not_visible' };
    // centre of the part of the rect inside the viewport
    var l = Math.max(rect.left, 0), t = Math.max(rect.top, 0);
    var rr = Math.min(rect.right, innerWidth), bb = Math.min(rect.bottom, innerHeight);
    if (rr <= l || bb <= t) { l = rect.left; t = rect.top; rr = rect.right; bb = rect.bottom; }
    var x = (l + rr) / 2, y = (t + bb) / 2;
    var hitEl = deepHit(x, y);
    var hit = !!hitEl && (composedContains(el, hitEl) || labelFor(hitEl, el) ||
      (el.localName === 'label' && !!el.control && composedContains(el.control, hitEl)));
    var out = { x: x, y: y, w: rect.width, h: rect.height, hit: hit };
    if (!hit) out.hitDesc = describe(hitEl);
    return out;
  }
  // The viewport position of a frame owner's content box, after scrolling the owner into
  // view when it is not fully visible; w/h is the inner frame's viewport size (clip box).
  function contentOrigin(id) {
    var r = resolve(id);
    if (r.error) return r;
    var el = r.el, b = el.getBoundingClientRect();
    var vw = document.documentElement.clientWidth || innerWidth, vh = document.documentElement.clientHeight || innerHeight;
    if (b.top < 0 || b.left < 0 || b.bottom > vh || b.right > vw) {
      el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
      b = el.getBoundingClientRect();
    }
    var cs = getComputedStyle(el);
    var pl = parseFloat(cs.paddingLeft) || 0, pt = parseFloat(cs.paddingTop) || 0;
    return { x: b.left + el.clientLeft + pl, y: b.top + el.clientTop + pt,
             w: el.clientWidth - pl - (parseFloat(cs.paddingRight) || 0),
             h: el.clientHeight - pt - (parseFloat(cs.paddingBottom) || 0) };
  }
  function editKind(el) {
    if (!el || el.nodeType !== 1) return null;
    var tag = el.localName;
    if (tag === 'textarea') return (el.disabled || el.readOnly) ? null : 'textarea';
    if (tag === 'input') return (EDITABLE_INPUT[el.type] && !el.disabled && !el.readOnly) ? 'input' : null;
    if (el.isContentEditable) return 'contenteditable';
    return null;
  }
  var Q_EDIT = 'input,textarea,[contenteditable]';
  function findEditable(el) {
    if (editKind(el)) return el;
    if (el.localName === 'label' && editKind(el.control)) return el.control;
    var stack = [el];
    while (stack.length) {
      var n = stack.pop();
      var sr = n.nodeType === 1 ? shadowOf(n) : null;
      var scopes = sr ? [n, sr] : [n];
      for (var s = 0; s < scopes.length; s++) {
        var cs = scopes[s].querySelectorAll(Q_EDIT);
        for (var i = 0; i < cs.length; i++) if (editKind(cs[i]) && visibleNow(cs[i])) return cs[i];
        // descend into nested shadow hosts
        var all = scopes[s].querySelectorAll('*');
        for (var j = 0; j < all.length; j++) if (shadowOf(all[j])) stack.push(all[j]);
      }
      if (stack.length > 50) break;
    }
    return null;
  }
  function focusForTyping(id) {
    var r = resolve(id);
    if (r.error) return r;
    var el = r.el, ed = findEditable(r.el);
    if (!ed) return { error: 'not_editable', role: roleOf(el, el.localName) };
    var kind = editKind(ed);
    if (kind === 'contenteditable') {
      var host = ed;
      while (host.parentElement && host.parentElement.isContentEditable) host = host.parentElement;
      ed = host;
    }
    ed.focus();
    if (kind === 'contenteditable') {
      var sel = (ed.getRootNode && ed.getRootNode().getSelection) ? ed.getRootNode().getSelection() : window.getSelection();
      if (!sel) sel = window.getSelection();
      var range = document.createRange();
      range.selectNodeContents(ed);
      sel.removeAllRanges();
      sel.addRange(range);
      return { kind: kind, value: ed.innerText };
    }
    try { ed.select(); } catch (e) { /* not selectable */ }
    return { kind: kind, value: ed.value };
  }
  // Date and time inputs: their keyboard entry follows the browser's locale, so
  // browser_type sets the value in the input's own format (ISO, or US MM/DD/YYYY for dates)
  // and fires input and change. {skip:true} for any other element.
  var DATE_TYPES = set('date time datetime-local month week');
  function p2(n) { n = String(n); return n.length < 2 ? '0' + n : n; }
  function normDate(type, s) {
    var m;
    if (type === 'date') {
      if ((m = /^(\d{4})-(\d{1,2})-(\d{1,2})$/.exec(s))) return m[1] + '-' + p2(m[2]) + '-' + p2(m[3]);
      if ((m = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/.exec(s))) return m[3] + '-' + p2(m[1]) + '-' + p2(m[2]);
    } else if (type === 'time') {
      if ((m = /^(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([ap]m)?$/i.exec(s))) {
        var h = +m[1];
        if (m[4]) h = (h % 12) + (/p/i.test(m[4]) ? 12 : 0);
        return p2(h) + ':' + m[2] + (m[3] ? ':' + m[3] : '');
      }
    } else if (type === 'month') {
      if ((m = /^(\d{4})-(\d{1,2})$/.exec(s))) return m[1] + '-' + p2(m[2]);
      if ((m = /^(\d{1,2})\/(\d{4})$/.exec(s))) return m[2] + '-' + p2(m[1]);
    } else if (type === 'week') {
      if ((m = /^(\d{4})-?W(\d{1,2})$/i.exec(s))) return m[1] + '-W' + p2(m[2]);
    } else if (type === 'datetime-local') {
      if ((m = /^(\d{4})-(\d{1,2})-(\d{1,2})[T ](\d{1,2}):(\d{2})(:\d{2})?$/.exec(s))) return m[1] + '-' + p2(m[2]) + '-' + p2(m[3]) + 'T' + p2(m[4]) + ':' + m[5] + (m[6] || '');
    }
    return null;
  }
  function setDateLike(id, text) {
    var r = resolve(id);
    if (r.error) return r;
    var el = r.el;
    if (el.localName === 'label' && el.control) el = el.control;
    if (el.localName !== 'input' || !DATE_TYPES[el.type]) return { skip: true };
    if (el.disabled || el.readOnly) return { error: 'not_editable' };
    var v = text === '' ? '' : normDate(el.type, String(text).trim());
    if (v === null) return { error: 'bad_format', type: el.type };
    el.focus();
    Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set.call(el, v);
    el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    return { value: el.value, type: el.type, wanted: v };
  }
  // Whether the element is shown (wait_for{ref}); never scrolls.
  function isVisible(id) {
    var r = resolve(id);
    if (r.error) return { visible: false, gone: true };
    return { visible: rendered(r.el) };
  }
  // The <input type=file> an element is (or labels): {id, multiple} or {file: false}.
  function fileInput(id) {
    var r = resolve(id);
    if (r.error) return r;
    var el = r.el;
    if (el.localName === 'label' && el.control) el = el.control;
    if (el.localName !== 'input' || el.type !== 'file') return { file: false };
    if (el.disabled) return { error: 'disabled' };
    return { file: true, id: idOf(el), multiple: el.multiple };
  }
  // The state a custom dropdown shows after a choice: its text, value, selected options.
  function comboState(id) {
    var r = resolve(id);
    if (r.error) return r;
    var el = r.el, sel = [];
    var ad = el.getAttribute('aria-activedescendant');
    var t = ad ? rootById(el, ad) : null;
    if (t && t.getAttribute('aria-selected') === 'true') sel.push(nameOf(t, t.localName, 'option', true));
    return { text: clean(el.innerText || el.textContent || ''), value: el.value === undefined ? null : String(el.value),
             expanded: el.getAttribute('aria-expanded'), selected: sel };
  }
  function readValue(id) {
    var r = resolve(id);
    if (r.error) return r;
    var el = r.el, tag = el.localName;
    if (tag === 'label' && el.control) { el = el.control; tag = el.localName; }
    if (tag === 'input' || tag === 'textarea') return el.value;
    if (tag === 'select') return selectedLabels(el).join(', ');
    if (el.isContentEditable) return el.innerText;
    var ed = findEditable(el);
    if (ed) return ed.isContentEditable ? ed.innerText : ed.value;
    return clean(el.innerText || el.textContent);
  }
  function selectOption(id, values) {
    var r = resolve(id);
    if (r.error) return r;
    var el = r.el;
    if (el.localName === 'option' && el.closest('select')) el = el.closest('select');
    if (el.localName === 'label' && el.control) el = el.control;
    if (el.localName !== 'select') return { custom: true, role: roleOf(el, el.localName) };
    if (typeof values === 'string') values = [values];
    var opts = Array.prototype.slice.call(el.options);
    var lab = function (o) { return clean(o.label || o.text); };
    var want = [], missing = [];
    values.forEach(function (v) {
      v = String(v);
      var o = opts.find(function (o) { return o.value === v; }) ||
        opts.find(function (o) { return lab(o) === v || o.text === v; }) ||
        opts.find(function (o) { return lab(o).toLowerCase() === clean(v).toLowerCase(); });
      if (o) want.push(o); else missing.push(v);
    });
    if (missing.length) return { error: 'missing_option', missing: missing, options: opts.map(lab) };
    if (!el.multiple && want.length > 1) return { error: 'not_multiple', options: opts.map(lab) };
    if (el.disabled) return { error: 'disabled' };
    opts.forEach(function (o) { o.selected = want.indexOf(o) >= 0; });
    el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    return { selected: selectedLabels(el), wanted: want.map(lab) };
  }
  function allOptions(root, out) {
    var list = root.querySelectorAll('[role=option]');
    for (var i = 0; i < list.length; i++) out.push(list[i]);
    var all = root.querySelectorAll('*');
    for (var j = 0; j < all.length; j++) { var sr = shadowOf(all[j]); if (sr) allOptions(sr, out); }
  }
  function findOptions(id) {
    var r = resolve(id);
    if (r.error) return r;
    var el = r.el, found = [];
    var own = [];
    ['aria-controls', 'aria-owns'].forEach(function (a) {
      var v = el.getAttribute(a);
      if (v) v.trim().split(/\s+/).forEach(function (x) { var t = rootById(el, x); if (t) own.push(t); });
    });
    var ad = el.getAttribute('aria-activedescendant');
    if (ad) { var t = rootById(el, ad); if (t && t.parentElement) own.push(t.parentElement); }
    own.push(el);
    own.forEach(function (t) {
      if (t.getAttribute('role') === 'option') found.push(t);
      allOptions(t, found);
    });
    if (!found.length) allOptions(document, found);
    var seen = new Set(), out = [];
    visCache = new Map();
    try {
      found.forEach(function (o) {
        if (seen.has(o)) return;
        seen.add(o);
        if (!rendered(o)) return;
        out.push({ id: idOf(o), name: nameOf(o, o.localName, 'option', true) });
      });
    } finally { visCache = null; }
    return out;
  }
  function closedHosts() {
    var out = [];
    (function scan(root) {
      var all = root.querySelectorAll('*');
      for (var i = 0; i < all.length; i++) {
        var e = all[i];
        var sr = shadowOf(e);
        if (sr) scan(sr);
        else if (e.localName.indexOf('-') > 0 && !checked.has(e)) out.push(e);
      }
    })(document);
    return out;
  }
  // adoptRoot(host, null) records that `host` has no closed root, so it is asked once only
  function adoptRoot(host, root) {
    if (host) checked.add(host);
    if (!host || !root || host.shadowRoot) return false;
    if (!adopted.has(host)) nAdopted++;
    adopted.set(host, root);
    return true;
  }

  var api = {
    version: VERSION,
    doc: DOC,
    idOf: idOf,
    byId: byId,
    snapshot: snapshot,
    point: point,
    contentOrigin: contentOrigin,
    focusForTyping: focusForTyping,
    readValue: readValue,
    selectOption: selectOption,
    findOptions: findOptions,
    closedHosts: closedHosts,
    adoptRoot: adoptRoot,
    isVisible: isVisible,
    setDateLike: setDateLike,
    clickEffects: clickEffects,
    fileInput: fileInput,
    comboState: comboState
  };
  Object.defineProperty(G, '__tabgate', { value: api, configurable: true, writable: true, enumerable: false });
})();
