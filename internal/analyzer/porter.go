package analyzer

// PorterStem returns the Porter (1980) stem of a lower-case ASCII word, as
// in Martin Porter's reference C implementation (including its two
// departures: "bli" -> "ble" and "logi" -> "log"). Words of one or two
// letters, and words with anything but a-z in them, come back unchanged.
// The offline embedder uses it so "engines", "engine" and "engineering"
// share a feature; the index's terms are Stem's (FTS5's rules on length
// and characters).
func PorterStem(word string) string {
	if len(word) <= 2 {
		return word
	}
	for i := 0; i < len(word); i++ {
		if word[i] < 'a' || word[i] > 'z' {
			return word
		}
	}
	return stemBytes(word)
}

func stemBytes(word string) string {
	z := porter{b: []byte(word)}
	z.run()
	return string(z.b)
}

func (z *porter) run() {
	z.step1ab()
	if len(z.b) > 1 {
		z.step1c()
		z.step2()
		z.step3()
		z.step4()
		z.step5()
	}
}

// porter holds the word being stemmed (b, its last index is k) and j, the
// end of the stem found by the last successful ends.
type porter struct {
	b []byte
	j int
}

func (z *porter) k() int { return len(z.b) - 1 }

// cons reports whether b[i] is a consonant.
func (z *porter) cons(i int) bool {
	switch z.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !z.cons(i-1)
	}
	return true
}

// m measures the number of consonant sequences in b[0..j]:
// [C](VC)^m[V] gives m.
func (z *porter) m() int {
	n, i, j := 0, 0, z.j
	for {
		if i > j {
			return n
		}
		if !z.cons(i) {
			break
		}
		i++
	}
	i++
	for {
		for {
			if i > j {
				return n
			}
			if z.cons(i) {
				break
			}
			i++
		}
		i++
		n++
		for {
			if i > j {
				return n
			}
			if !z.cons(i) {
				break
			}
			i++
		}
		i++
	}
}

// vowelInStem reports whether b[0..j] contains a vowel.
func (z *porter) vowelInStem() bool {
	for i := 0; i <= z.j; i++ {
		if !z.cons(i) {
			return true
		}
	}
	return false
}

// doublec reports whether b[j-1..j] is a double consonant.
func (z *porter) doublec(j int) bool {
	if j < 1 || z.b[j] != z.b[j-1] {
		return false
	}
	return z.cons(j)
}

// cvc reports whether b[i-2..i] is consonant-vowel-consonant and the last
// consonant is not w, x or y.
func (z *porter) cvc(i int) bool {
	if i < 2 || !z.cons(i) || z.cons(i-1) || !z.cons(i-2) {
		return false
	}
	switch z.b[i] {
	case 'w', 'x', 'y':
		return false
	}
	return true
}

// ends reports whether b ends with s and, if so, sets j to the index before
// the suffix.
func (z *porter) ends(s string) bool {
	if len(s) > len(z.b) || string(z.b[len(z.b)-len(s):]) != s {
		return false
	}
	z.j = len(z.b) - len(s) - 1
	return true
}

// setto replaces b[j+1..] with s.
func (z *porter) setto(s string) { z.b = append(z.b[:z.j+1], s...) }

// r is setto when m() > 0.
func (z *porter) r(s string) {
	if z.m() > 0 {
		z.setto(s)
	}
}

func (z *porter) step1ab() {
	if z.b[z.k()] == 's' {
		switch {
		case z.ends("sses"):
			z.b = z.b[:len(z.b)-2]
		case z.ends("ies"):
			z.setto("i")
		case z.b[z.k()-1] != 's':
			z.b = z.b[:len(z.b)-1]
		}
	}
	if z.ends("eed") {
		if z.m() > 0 {
			z.b = z.b[:len(z.b)-1]
		}
		return
	}
	if (z.ends("ed") || z.ends("ing")) && z.vowelInStem() {
		z.b = z.b[:z.j+1]
		z.j = z.k()
		switch {
		case z.ends("at"):
			z.setto("ate")
		case z.ends("bl"):
			z.setto("ble")
		case z.ends("iz"):
			z.setto("ize")
		case z.doublec(z.k()):
			switch z.b[z.k()] {
			case 'l', 's', 'z':
			default:
				z.b = z.b[:len(z.b)-1]
			}
		default:
			z.j = z.k()
			if z.m() == 1 && z.cvc(z.k()) {
				z.setto("e")
			}
		}
	}
}

func (z *porter) step1c() {
	if z.ends("y") && z.vowelInStem() {
		z.b[z.k()] = 'i'
	}
}

func (z *porter) step2() {
	if len(z.b) < 2 {
		return
	}
	switch z.b[z.k()-1] {
	case 'a':
		if z.ends("ational") {
			z.r("ate")
		} else if z.ends("tional") {
			z.r("tion")
		}
	case 'c':
		if z.ends("enci") {
			z.r("ence")
		} else if z.ends("anci") {
			z.r("ance")
		}
	case 'e':
		if z.ends("izer") {
			z.r("ize")
		}
	case 'l':
		if z.ends("bli") {
			z.r("ble")
		} else if z.ends("alli") {
			z.r("al")
		} else if z.ends("entli") {
			z.r("ent")
		} else if z.ends("eli") {
			z.r("e")
		} else if z.ends("ousli") {
			z.r("ous")
		}
	case 'o':
		if z.ends("ization") {
			z.r("ize")
		} else if z.ends("ation") {
			z.r("ate")
		} else if z.ends("ator") {
			z.r("ate")
		}
	case 's':
		if z.ends("alism") {
			z.r("al")
		} else if z.ends("iveness") {
			z.r("ive")
		} else if z.ends("fulness") {
			z.r("ful")
		} else if z.ends("ousness") {
			z.r("ous")
		}
	case 't':
		if z.ends("aliti") {
			z.r("al")
		} else if z.ends("iviti") {
			z.r("ive")
		} else if z.ends("biliti") {
			z.r("ble")
		}
	case 'g':
		if z.ends("logi") {
			z.r("log")
		}
	}
}

func (z *porter) step3() {
	switch z.b[z.k()] {
	case 'e':
		if z.ends("icate") {
			z.r("ic")
		} else if z.ends("ative") {
			z.r("")
		} else if z.ends("alize") {
			z.r("al")
		}
	case 'i':
		if z.ends("iciti") {
			z.r("ic")
		}
	case 'l':
		if z.ends("ical") {
			z.r("ic")
		} else if z.ends("ful") {
			z.r("")
		}
	case 's':
		if z.ends("ness") {
			z.r("")
		}
	}
}

func (z *porter) step4() {
	if len(z.b) < 2 {
		return
	}
	var ok bool
	switch z.b[z.k()-1] {
	case 'a':
		ok = z.ends("al")
	case 'c':
		ok = z.ends("ance") || z.ends("ence")
	case 'e':
		ok = z.ends("er")
	case 'i':
		ok = z.ends("ic")
	case 'l':
		ok = z.ends("able") || z.ends("ible")
	case 'n':
		ok = z.ends("ant") || z.ends("ement") || z.ends("ment") || z.ends("ent")
	case 'o':
		ok = (z.ends("ion") && z.j >= 0 && (z.b[z.j] == 's' || z.b[z.j] == 't')) || z.ends("ou")
	case 's':
		ok = z.ends("ism")
	case 't':
		ok = z.ends("ate") || z.ends("iti")
	case 'u':
		ok = z.ends("ous")
	case 'v':
		ok = z.ends("ive")
	case 'z':
		ok = z.ends("ize")
	}
	if ok && z.m() > 1 {
		z.b = z.b[:z.j+1]
	}
}

func (z *porter) step5() {
	z.j = z.k()
	if z.b[z.k()] == 'e' {
		a := z.m()
		if a > 1 || (a == 1 && !z.cvc(z.k()-1)) {
			z.b = z.b[:len(z.b)-1]
		}
	}
	z.j = z.k()
	if z.b[z.k()] == 'l' && z.doublec(z.k()) && z.m() > 1 {
		z.b = z.b[:len(z.b)-1]
	}
}
