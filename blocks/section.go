package blocks

// Composite blocks: the same operations, addressed to a section. A section
// marked read-only in the schema binds agents whatever their permission.

// SetTextInSection replaces the text of a Text section.
func (d *Document) SetTextInSection(section, text string, actor Actor) error {
	return d.setText(mustSection(section), text, actor)
}

// AppendTextInSection appends to a Text section.
func (d *Document) AppendTextInSection(section, text string, actor Actor) error {
	return d.appendText(mustSection(section), text, actor)
}

// ReplaceTextInSection replaces the first occurrence of old in a Text
// section (see ReplaceText: no occurrence is an error wrapping ErrNoMatch).
func (d *Document) ReplaceTextInSection(section, old, new string, actor Actor) (bool, error) {
	return d.replaceText(mustSection(section), old, new, actor)
}

// InsertLineInSection inserts a line into a Text section (see InsertLine).
func (d *Document) InsertLineInSection(section string, n int, text string, actor Actor) error {
	return d.insertLine(mustSection(section), n, text, actor)
}

// SetFieldInSection sets a field of a Map section.
func (d *Document) SetFieldInSection(section, field string, value any, actor Actor) error {
	return d.setField(mustSection(section), field, value, actor, false)
}

// AppendToListFieldInSection appends to a list field of a Map section.
func (d *Document) AppendToListFieldInSection(section, field string, item any, actor Actor) error {
	return d.appendToListField(mustSection(section), field, item, actor)
}

// IncrementCounterInSection increments a counter field of a Map section.
func (d *Document) IncrementCounterInSection(section, field string, delta int64, actor Actor) error {
	return d.incrementCounter(mustSection(section), field, delta, actor)
}

// PushItemInSection appends an item to a List section.
func (d *Document) PushItemInSection(section string, item any, actor Actor) error {
	return d.pushItem(mustSection(section), item, actor)
}

// InsertItemInSection inserts an item into a List section.
func (d *Document) InsertItemInSection(section string, i int, item any, actor Actor) error {
	return d.insertItem(mustSection(section), i, item, actor)
}

// DeleteItemInSection removes an item from a List section.
func (d *Document) DeleteItemInSection(section string, i int, actor Actor) error {
	return d.deleteItem(mustSection(section), i, actor)
}

// CheckItemInSection sets the checked state of an item of a checkbox List
// section.
func (d *Document) CheckItemInSection(section string, i int, checked bool, actor Actor) error {
	return d.checkItem(mustSection(section), i, checked, actor)
}

// AppendLogEntryInSection appends an entry to a Log section.
func (d *Document) AppendLogEntryInSection(section string, entry map[string]any, actor Actor) error {
	return d.appendLogEntry(mustSection(section), entry, actor)
}

// Section returns a copy of one section's value.
func (d *Document) Section(section string) (any, error) {
	s, err := d.nodeSchema(mustSection(section))
	if err != nil {
		return nil, err
	}
	return d.nodeValue(section, s.Kind())
}

// mustSection maps an empty section name to one that cannot exist, so a
// section method never silently targets the whole block.
func mustSection(section string) string {
	if section == "" {
		return "\x00"
	}
	return section
}
