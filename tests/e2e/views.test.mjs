// The views' tests that read one page in turn: each module under `views/` holds one view's tests
// and asks `useSite` for the page, which the modules of this file share (one browser, one site,
// one first visit; see `useSite`). A module's tests run in the order it lists them, the modules in
// the order below.

import './views/verdict-picture.mjs';
import './views/gap-causes.mjs';
import './views/kernel-classes.mjs';
import './views/rootcause-shapes.mjs';
import './views/ranks.mjs';
import './views/row-order.mjs';
import './views/capture.mjs';
import './views/hostside.mjs';
import './views/markers.mjs';
import './views/rootcause-window.mjs';
