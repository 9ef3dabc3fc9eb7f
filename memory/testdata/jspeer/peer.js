// The "next" API: strings are automerge text, edited with splice.
// node peer.js IN OUT TEXT...: loads the saved block document IN, appends
// each TEXT as one change, and after each writes Automerge.saveIncremental
// to OUT, OUT.1, OUT.2, ... (the first save holds what the load brought
// in too; the later ones only the new change, which builds on the rest).
const A = require('@automerge/automerge').next;
const fs = require('fs');
const [,, inFile, outFile, ...texts] = process.argv;
let doc = A.load(new Uint8Array(fs.readFileSync(inFile)));
texts.forEach((text, i) => {
  doc = A.change(doc, { message: JSON.stringify({ a: 'js-peer', op: 'append_text' }) }, d => {
    A.splice(d, ['content'], d.content.length, 0, text);
  });
  fs.writeFileSync(i === 0 ? outFile : `${outFile}.${i}`, A.saveIncremental(doc));
});
console.log(JSON.stringify({ content: doc.content }));
