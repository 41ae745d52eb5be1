package dev.elves.gateway.data;

import java.util.Set;

/** The NEXRAD WSR-88D sites of the contiguous United States a data request may name. */
final class RadarStations {

	static final int ID_LENGTH = 4;

	static final Set<String> ALL = Set.of("KABR", "KABX", "KAKQ", "KAMA", "KAMX", "KAPX", "KARX", "KATX", "KBBX",
			"KBGM", "KBHX", "KBIS", "KBLX", "KBMX", "KBOX", "KBRO", "KBUF", "KBYX", "KCAE", "KCBW", "KCBX", "KCCX",
			"KCLE", "KCLX", "KCRP", "KCXX", "KCYS", "KDAX", "KDDC", "KDFX", "KDGX", "KDIX", "KDLH", "KDMX", "KDOX",
			"KDTX", "KDVN", "KDYX", "KEAX", "KEMX", "KENX", "KEOX", "KEPZ", "KESX", "KEVX", "KEWX", "KEYX", "KFCX",
			"KFDR", "KFDX", "KFFC", "KFSD", "KFSX", "KFTG", "KFWS", "KGGW", "KGJX", "KGLD", "KGRB", "KGRK", "KGRR",
			"KGSP", "KGWX", "KGYX", "KHDX", "KHGX", "KHNX", "KHPX", "KHTX", "KICT", "KICX", "KILN", "KILX", "KIND",
			"KINX", "KIWA", "KIWX", "KJAX", "KJGX", "KJKL", "KLBB", "KLCH", "KLGX", "KLIX", "KLNX", "KLOT", "KLRX",
			"KLSX", "KLTX", "KLVX", "KLWX", "KLZK", "KMAF", "KMAX", "KMBX", "KMHX", "KMKX", "KMLB", "KMOB", "KMPX",
			"KMQT", "KMRX", "KMSX", "KMTX", "KMUX", "KMVX", "KMXX", "KNKX", "KNQA", "KOAX", "KOHX", "KOKX", "KOTX",
			"KPAH", "KPBZ", "KPDT", "KPOE", "KPUX", "KRAX", "KRGX", "KRIW", "KRLX", "KRTX", "KSFX", "KSGF", "KSHV",
			"KSJT", "KSOX", "KSRX", "KTBW", "KTFX", "KTLH", "KTLX", "KTWX", "KTYX", "KUDX", "KUEX", "KVAX", "KVBX",
			"KVNX", "KVTX", "KVWX", "KYUX");

	private RadarStations() {
	}

}
