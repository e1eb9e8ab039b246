// The text of the embedded corpus (see corpus.h: original text, CC0 1.0).
#include "gtl/data/corpus.h"

namespace gtl::data {

namespace {
constexpr std::string_view kText = R"corpus(THE LAMPLIGHTER'S LEDGER

Chapter One. The Town by the River

In the town by the river there lived a lamplighter named Oren. Every evening he walked the long
street from the bridge to the mill, and every evening he lit the lamps one by one. He carried a
ladder on his shoulder, a small flame in a brass cup, and a ledger in the pocket of his coat. In
the ledger he wrote the number of each lamp, the hour he lit it, and a word about the weather.

"Lamp one, six o'clock, wind from the west," he wrote. "Lamp two, six o'clock, wind from the
west. Lamp three, a little after six, the glass is cracked."

The children of the town followed him from lamp to lamp. They liked to watch the flame jump from
the brass cup to the wick, and they liked to hear him count. "One lamp, two lamps, three lamps,"
they sang, "and the night comes down the river."

Oren did not mind the children. He told them the names of the stars as they came out, and he
told them that a lamp is a small promise: that the street will still be there in the morning,
and that someone walked it in the dark so that others would not have to.

Chapter Two. The Ledger

The ledger was old. Oren's mother had kept it before him, and her father before her. The first
pages were written in a hand so small that the letters looked like seeds. Lamp one, lamp two,
lamp three; wind from the west, wind from the east, rain, snow, fog on the water. Year after year
the same lamps and the same words, and yet no two pages were the same.

One winter evening a girl named Mira asked to see it. She turned the pages slowly. "Why do you
write it all down?" she asked. "The lamps are always the same."

"The lamps are the same," said Oren, "but the nights are not. If you read enough pages, you can
tell what the river will do. When the wind is from the east for three nights, the fog comes.
When the fog comes, the mill road is dark by five. When the mill road is dark by five, I start
at the mill and walk toward the bridge."

Mira read the pages again. She saw that he was right. After three east winds the ledger said fog,
and after fog it said mill road first. The ledger remembered what no single night could know.

"So the ledger learns," she said.

"The ledger keeps," said Oren. "I am the one who learns. But I could not learn without it."

Chapter Three. The Storm

In the spring a storm came up the river. The wind was from the south, which the ledger had seen
only twice in fifty years. The rain fell so hard that the flame in the brass cup went out three
times before Oren reached the second lamp.

He sheltered under the bridge and opened the ledger. Wind from the south, the ledger said, in
the year of the high water. Lamps four to nine went out. The lamplighter lit them again from the
lamp at the bridge, and carried the flame in a covered lantern.

So Oren lit lamp one at the bridge, and from lamp one he lit a covered lantern, and with the
lantern he walked the street again. Lamp two, lamp three, lamp four. The rain beat on the
lantern's glass but the flame inside stayed small and steady. Lamp five, lamp six, lamp seven.
At the mill the water was high and loud, and lamp nine swung on its chain. He climbed the ladder
and lit it anyway.

When he came back to the bridge, Mira was waiting with her mother. "We watched the lamps come
back," said Mira, "one by one, all the way to the mill."

That night Oren wrote in the ledger: "Wind from the south. Lamps four to nine went out. Lit again
from the lamp at the bridge, with the covered lantern. The girl Mira watched."

Chapter Four. The Apprentice

In the summer Mira asked if she could learn to light the lamps. Oren gave her a short ladder and
a small brass cup. He showed her how to hold the flame so the wind could not reach it, how to
open the glass without burning her fingers, and how to trim a wick that smoked.

"Count as you go," he told her. "One lamp, two lamps, three lamps. If you lose count, go back to
the last lamp you are sure of and start again from there."

At first she was slow. She lost count at lamp five and had to walk back to lamp four. She
spilled the flame once and had to light it again from the lamp behind her. But every evening she
was a little faster, and every evening she wrote in the ledger, in a hand larger than Oren's.

"Lamp one, seven o'clock, wind from the west, warm. Lamp two, seven o'clock. Lamp three, seven
o'clock, a moth inside the glass."

Oren read her pages and smiled. "You write more than I do," he said.

"There is more to see," said Mira.

Chapter Five. Many Hands

By the autumn the town had grown. There was a new street beyond the mill, and a new bridge below
the old one, and twenty new lamps. One lamplighter could not light them all before the dark.

"We need more hands," said Mira.

So they divided the street. Oren took the lamps from the old bridge to the mill. Mira took the
lamps from the mill to the new street. A boy named Tal took the new bridge. Each of them carried
a flame and a ladder and a page of the ledger, and each of them lit their lamps at the same time
as the others.

At first the pages did not agree. Tal wrote the hour by the church bell, Mira by the mill clock,
and Oren by the sun. "Wind from the west," wrote one; "wind from the north," wrote another, on
the same night. When they put the pages together, the ledger made no sense.

So they agreed on rules. They would all use the church bell. They would all write the wind as it
was at the bridge. And at the end of each night they would meet at the old bridge and copy their
pages into the one ledger, in the same order every time: first the old street, then the mill
road, then the new bridge.

"Same order every time," said Tal. "Why does it matter?"

"Because then the ledger is the same no matter who is slow," said Mira. "If I finish first one
night and last the next, the book still reads the same. Anyone can check it."

Chapter Six. The Fog

In the winter the east wind blew for three nights, and on the fourth the fog came. It came up the
river thick and white, and it covered the new street before the bell rang five.

The ledger said: after three east winds, fog; after fog, start at the mill. But now there were
three lamplighters and three streets, and the ledger had never seen the new street in fog.

Mira thought about it. "The new street is lower than the mill road," she said. "The fog will
reach it first. Tal should start at the far end of the new bridge and walk toward us. I will
start at the new street. Oren will start at the mill."

They did as she said. The lamps came on from the low places first, where the fog was thickest,
and then up toward the old bridge, where the fog was thin. Nobody in the town walked in the dark
that night.

When they met at the bridge, Oren opened the ledger and wrote: "East wind, three nights. Fog on
the fourth. New street first, then the mill, then the old bridge. Mira's plan."

Then he gave the pen to Mira. "The ledger is yours now," he said. "I will still light the lamps
from the bridge to the mill, for as long as my knees let me. But you know the whole street now,
and the ledger should be kept by the one who knows the whole street."

Chapter Seven. The Ledger Keeps

Years went by. Oren grew old and sat by the window of the house near the bridge, and watched the
lamps come on one by one. Mira kept the ledger. Tal taught two more children to carry the flame.
The town grew again, and the ledger grew with it, page after page of lamps and hours and winds.

Sometimes a child would ask Mira why she wrote it all down, when the lamps were always the same.

"The lamps are the same," she would say, "but the nights are not. Read enough pages and you will
know what the river will do. The ledger keeps what no single night can know. And you learn from
what it keeps."

Then she would hand the child a small brass cup, and show them how to hold the flame so the wind
could not reach it.

"Count as you go," she would say. "One lamp, two lamps, three lamps. If you lose count, go back to
the last lamp you are sure of, and start again from there."

And the children would sing as they walked, from the bridge to the mill: "One lamp, two lamps,
three lamps, and the night comes down the river."

Afterword. A Note on the Ledger

A ledger like Oren's is a kind of model. It does not know why the fog comes after the east wind;
it only keeps the pages, and the pages show the pattern. Whoever reads enough of them learns to
guess the next line before it is written: after "lamp one" comes "lamp two", after "wind from the"
comes "west" more often than "east", and after three east winds comes the fog.

A small language model learns in the same way. It reads a text one letter at a time and tries to
guess the next letter. At first its guesses are no better than chance, one in two hundred and
fifty six. Then it learns that a space follows a word, that "th" is often followed by "e", that
"lamp" is followed by a number, and that a chapter begins with the word "Chapter". It never sees
the river or the lamps. It only keeps the pages, and learns what they have in common.
)corpus";
}  // namespace

std::string_view embedded_corpus() {
  return kText;
}

}  // namespace gtl::data
